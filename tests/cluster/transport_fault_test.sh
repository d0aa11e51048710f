#!/usr/bin/env bash
# Failures become clear errors, not hangs: a peer killed mid-transfer, on another node or on the same
# one (shared memory), is named by the survivor within 10 s, and a rank that never reaches a fence is named when the fence times out.
source "$(dirname "$0")/lib.sh"
# --cnet-bind=none: the fixture cluster's cnet.so describes the 32em64t machine, whose mlx5_0 is not here.

start=$SECONDS
out=$(on_cluster srun --mpi=pmix --cnet-bind=none -N2 -n2 "$CNET_BIN/transport_fault" peer-dies 2>/dev/null) && fail "peer-dies exited 0"
echo "$out"
grep -Eq '^survivor: .*rank 1 on cn2 (is gone|failed)' <<<"$out" || fail "the survivor did not name the dead peer"
((SECONDS - start < 10)) || fail "took $((SECONDS - start)) s to notice the dead peer"

# The same on one node, where the pair talks over shared memory: the survivor sees the process exit.
start=$SECONDS
out=$(on_cluster srun --mpi=pmix --cnet-bind=none -N1 -n2 "$CNET_BIN/transport_fault" peer-dies 2>/dev/null) && fail "same-node peer-dies exited 0"
echo "$out"
grep -q '^survivor: .*rank 1 on cn1 is gone (its process exited)' <<<"$out" || fail "the survivor did not name the dead same-node peer"
((SECONDS - start < 10)) || fail "took $((SECONDS - start)) s to notice the dead same-node peer"

# A sender that dies while the survivor copies straight out of its memory (CMA), and one whose shared
# memory is gone before the survivor ever reached for it: both fail inside UCX, and each must become the
# same error, not an abort of the survivor.
for mode in peer-dies-mid-copy peer-dies-unmet; do
  start=$SECONDS
  out=$(on_cluster srun --mpi=pmix --cnet-bind=none -N1 -n2 "$CNET_BIN/transport_fault" $mode 2>&1) && fail "$mode exited 0"
  echo "$out"
  grep -q '^survivor: .*rank 1 on cn1 is gone (its process exited)' <<<"$out" || fail "$mode: the survivor did not name the dead peer"
  grep -q 'backtrace' <<<"$out" && fail "$mode: UCX aborted the survivor"
  ((SECONDS - start < 10)) || fail "$mode: took $((SECONDS - start)) s to notice the dead same-node peer"
done

out=$(on_cluster srun --mpi=pmix --cnet-bind=none --kill-on-bad-exit=1 -N2 -n3 "$CNET_BIN/transport_fault" late-rank 2>/dev/null) && fail "late-rank exited 0"
echo "$out"
grep -Eq '^survivor: fence timed out after 5 s .*not confirmed as arrived: 1(,|$| )' <<<"$out" || fail "the absent rank 1 was not named"
grep -q 'arrived: 0' <<<"$out" && fail "the survivor named itself"
echo ok
