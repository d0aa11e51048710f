#!/usr/bin/env bash
# cnet-doctor --job across the minicluster: one row per node with its verdict and a UCX pair test to
# rank 0; a node failing a check, or slower than a saved baseline, is named and the exit code says so.
source "$(dirname "$0")/lib.sh"
work=$CNET_BUILD_DIR/test-work/doctor-job
rm -rf "$work" && mkdir -p "$work"
printf 'clock = off\nnics = off\nswap = off\nmemlock = off\n' >"$work/doctor.conf"
doctor_job() {
  on_cluster srun --mpi=pmix --cnet-bind=none -N2 --ntasks-per-node=2 bash -c \
    'exec "$0" --job --config "$1" --firewall-rules "$2.$(hostname)" "${@:3}"' "$CNET_BIN/cnet-doctor" "$work/doctor.conf" "$work/rules" "$@"
}

out=$(doctor_job --save-baseline "$work/baseline.json") || fail "a healthy job: $out"
echo "$out"
grep -Eq '^cn1 +(pass|warn) +\(rank 0\)' <<<"$out" || fail "no row for cn1"
grep -Eq '^cn2 +(pass|warn) +[0-9.]+ +[0-9.]+ *$' <<<"$out" || fail "cn2's row has no pair test or shows a problem"
/usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); r=b["reports"][0]; assert r["hosts"]==["cn1","cn2"] and r["results"][-1]["bandwidth_gbytes"] > 0' "$work/baseline.json" ||
  fail "baseline not saved in cnet-perf's baseline format"

port=$(sed -n 's/^SlurmdPort=//p' "$CNET_MINICLUSTER_DIR/etc/slurm.conf")
echo "-A INPUT -p tcp --dport $port -j REJECT" >"$work/rules.cn2"
rc=0
out=$(doctor_job) || rc=$?
expect_eq "$rc" 1 "exit code with a failing node"
grep -Eq "^cn2 +fail .*firewall: .*blocks Slurm port $port" <<<"$out" || fail "cn2's failure not shown: $out"
rm "$work/rules.cn2"

# The same baseline, 1000x faster than any link here: cn2's link is named as regressed.
/usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); [x.update(bandwidth_gbytes=x["bandwidth_gbytes"]*1000) for x in b["reports"][0]["results"]]; json.dump(b,open(sys.argv[2],"w"))' \
  "$work/baseline.json" "$work/fast.json"
rc=0
out=$(doctor_job --compare-baseline "$work/fast.json") || rc=$?
expect_eq "$rc" 1 "exit code when a link is slower than its baseline"
grep -q "^cn2 .*link to rank 0: 1 MiB: bandwidth .* GB/s vs .* GB/s in the baseline" <<<"$out" || fail "the slow link is not named: $out"
echo ok
