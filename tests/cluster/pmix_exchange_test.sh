#!/usr/bin/env bash
# PMIx Put/Commit/Fence/Get across two namespaced nodes through Slurm's mpi/pmix server.
source "$(dirname "$0")/lib.sh"

out=$(on_cluster srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$CNET_BIN/pmix_exchange" | sort)
echo "$out"
expect_eq "$(grep -c ': 4/4 peers ok; hosts cn1,cn1,cn2,cn2$' <<<"$out")" 4 "ranks that saw every peer"
for r in 0 1 2 3; do grep -q "^rank $r of 4 on cn" <<<"$out" || fail "rank $r missing"; done
expect_eq "$(grep -c 'node . of 2' <<<"$out")" 4 "ranks reporting two nodes"

# Without PMIx the bootstrap must refuse rather than make every task rank 0.
if err=$(on_cluster srun --mpi=none -N1 -n1 "$CNET_BIN/pmix_exchange" 2>&1); then fail "ran without PMIx"; fi
[[ $err == *"--mpi=pmix"* ]] || fail "no hint to use --mpi=pmix: $err"
