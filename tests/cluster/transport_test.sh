#!/usr/bin/env bash
# UcxChannel and the collectives across two nodes, with 4 ranks (power of two) and 3 (not): every
# result checked against a single process computing the same, deterministic allreduce bit for bit.
source "$(dirname "$0")/lib.sh"
# --cnet-bind=none: the fixture cluster's cnet.so describes the 32em64t machine, whose mlx5_0 is not here.

for n in 4 3; do
  out=$(on_cluster srun --mpi=pmix --cnet-bind=none -N2 -n$n --overcommit "$CNET_BIN/transport_check")
  echo "$out"
  grep -q "FAIL" <<<"$out" && fail "a transport check failed with $n ranks"
  grep -q "^transport_check: 0 failure(s) on rank 0, $n ranks" <<<"$out" || fail "no summary for $n ranks"
  expect_eq "$(grep -c 'deterministic (bit-identical to rank-order sum)' <<<"$out")" 6 "deterministic allreduce checks ($n ranks)"
done
