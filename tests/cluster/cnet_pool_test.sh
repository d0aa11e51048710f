#!/usr/bin/env bash
# cnet-pool against the minicluster: GPUs in use follow a job that holds them, and a drained node shows
# its reason.
source "$(dirname "$0")/lib.sh"
pool() { on_cluster "$CNET_BIN/cnet-pool" --json; }
field() { /usr/bin/python3 -c 'import json,sys; r={n["node"]: n for n in json.load(sys.stdin)}; print(r[sys.argv[1]][sys.argv[2]])' "$@"; }

expect_eq "$(pool | field cn1 gpus_total)" 2 "GPUs on cn1"
expect_eq "$(pool | field cn1 gpus_used)" 0 "GPUs in use before the job"

work=$(mktemp -d /var/tmp/cnet-pool-XXXXXX)
trap 'on_cluster scancel --name=cnet-pool-hold >/dev/null 2>&1 || true; on_cluster scontrol update nodename=cn2 state=resume >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
job=$(cd "$work" && on_cluster sbatch --parsable --job-name=cnet-pool-hold -w cn1 --gres=gpu:2 --wrap 'sleep 120')
for _ in $(seq 50); do [[ $(on_cluster squeue -h -j "$job" -o %t) == R ]] && break; sleep 0.2; done
expect_eq "$(pool | field cn1 gpus_used)" 2 "GPUs in use while the job runs"
on_cluster "$CNET_BIN/cnet-pool" | grep -q '2 of 4 GPUs in use, 2 free' || fail "table totals"

on_cluster scontrol update nodename=cn2 state=drain reason="cnet pool test"
expect_eq "$(pool | field cn2 state)" drained "cn2 state"
expect_eq "$(pool | field cn2 reason)" "cnet pool test" "cn2 reason"

on_cluster scancel "$job"
for _ in $(seq 50); do [[ $(pool | field cn1 gpus_used) == 0 ]] && break; sleep 0.2; done
expect_eq "$(pool | field cn1 gpus_used)" 0 "GPUs in use after the job"
