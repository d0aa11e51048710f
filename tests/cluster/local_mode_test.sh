#!/usr/bin/env bash
# The same transport checks without Slurm: N ranks under cnet's own PMIx server (--local).
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }

for n in 2 3; do
  out=$("$CNET_BIN/local_run" $n "$CNET_BIN/transport_check")
  grep -q FAIL <<<"$out" && { echo "$out"; fail "transport check failed with $n local ranks"; }
  grep -q "^transport_check: 0 failure(s) on rank 0, $n ranks" <<<"$out" || fail "no summary for $n local ranks: $out"
done
echo "transport_check passes with 2 and 3 local ranks"

out=$("$CNET_BIN/cnet-perf" --local 2 p2p --max-size 4096 --iters 20 --json)
/usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["ranks"]==2 and len(r["results"])==5' <<<"$out" || fail "cnet-perf --local JSON: $out"
# Ranks on one node talk over shared memory by default, peer-failure detection and all.
/usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)["transports"]; assert "memory" in t and "tcp" not in t, t' <<<"$out" ||
  fail "same-node ranks do not use shared memory: $out"

# A baseline that is missing, or holds no report for this mode, is a bad argument (exit 2) found before
# anything is measured, not a failed link test at the end.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
err=$("$CNET_BIN/cnet-perf" --local 2 p2p --max-size 4096 --iters 5 --compare-baseline "$work/none.json" 2>&1) || rc=$?
[[ $rc == 2 ]] || fail "a missing baseline gave exit $rc, not 2: $err"
[[ $err == *"--compare-baseline $work/none.json: "*"does not exist"*"--save-baseline"* ]] || fail "the missing baseline is not named with the fix: $err"
[[ $err != *"# cnet-perf p2p"* ]] || fail "measured before finding the baseline missing: $err"
"$CNET_BIN/cnet-perf" --local 2 p2p --max-size 4096 --iters 5 --save-baseline "$work/p2p.json" >/dev/null 2>&1 || fail "cannot save a baseline"
rc=0
err=$("$CNET_BIN/cnet-perf" --local 2 allreduce --max-size 4096 --iters 5 --compare-baseline "$work/p2p.json" 2>&1) || rc=$?
[[ $rc == 2 && $err == *"holds no allreduce baseline"* ]] || fail "a baseline of another mode gave exit $rc: $err"

# A rank killed mid-transfer: the launcher names it and stops the rest at once, no hang.
start=$SECONDS
rc=0
err=$("$CNET_BIN/local_run" 2 "$CNET_BIN/transport_fault" peer-dies 2>&1) || rc=$?
echo "$err"
[[ $rc != 0 ]] || fail "a killed rank went unnoticed"
# Whoever notices first names rank 1: the surviving rank, or the launcher reaping it.
[[ $err == *"rank 1 on "*" is gone"* || $err == *"rank 1 was killed by signal 9; stopping the other ranks"* ]] ||
  fail "the dead rank is not named"
((SECONDS - start < 10)) || fail "took $((SECONDS - start)) s"

# Every pair of three ranks (one machine: each rank is its own node), as a matrix, a heatmap and a
# baseline of the three pairs; the picture renders. Three busy ranks on a small shared machine may well
# make a pair slow (exit 1); only a failure to measure (exit 2 or 3) fails here.
rc=0
"$CNET_BIN/cnet-perf" --local 3 matrix --json --heatmap "$work/pairs.svg" --save-baseline "$work/pairs.json" >"$work/matrix.json" 2>/dev/null || rc=$?
((rc <= 1)) || fail "cnet-perf matrix exited $rc: $(cat "$work/matrix.json")"
python3 - "$work/matrix.json" "$work/pairs.json" <<'PY' || fail "the matrix is incomplete"
import json, sys
m, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(m["hosts"]) == 3 and all(h.endswith("/%d" % r) for r, h in enumerate(m["hosts"])), m["hosts"]
assert all(m["gbytes"][i][j] > 0 and m["p99_us"][i][j] > 0 and m["gbytes"][i][j] == m["gbytes"][j][i] for i in range(3) for j in range(3) if i != j), m
assert len(b["reports"]) == 3, b
PY
rsvg-convert "$work/pairs.svg" -o "$work/pairs.png" || fail "the heatmap does not render"
[[ $(grep -c 'class="pair' "$work/pairs.svg") == 12 ]] || fail "the heatmap does not have a cell per pair in both maps"
out=$("$CNET_BIN/cnet-perf" --local 2 p2p --heatmap "$work/x.svg" 2>&1) && fail "--heatmap with p2p accepted"
[[ $out == *"cnet-perf matrix --heatmap"* ]] || fail "no reason given: $out"

# Ranks do not outlive a launcher that is killed: they would go on writing and hold the output's lock.
"$CNET_BIN/local_run" 2 /bin/sleep 30 &
launcher=$!
for ((i = 0; i < 50; i++)); do [[ $(pgrep -c -P $launcher) == 2 ]] && break; sleep 0.1; done
ranks=$(pgrep -P $launcher) || fail "the ranks never started"
kill -9 $launcher
wait $launcher 2>/dev/null || true
sleep 1
alive() { [[ -r /proc/$1/stat && $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
for r in $ranks; do alive "$r" && { kill "$r"; fail "rank $r outlived its killed launcher"; }; done

rc=0
"$CNET_BIN/local_run" 2 /nonexistent/program 2>/dev/null || rc=$?
[[ $rc == 127 ]] || fail "a missing program gave exit $rc, not 127"
echo ok
