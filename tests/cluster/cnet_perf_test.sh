#!/usr/bin/env bash
# cnet-perf under srun: p2p and allreduce rows for every size, a saved baseline that the same link
# passes, and a doctored baseline that makes it exit 1 naming the sizes that regressed.
source "$(dirname "$0")/lib.sh"
# --cnet-bind=none: the fixture cluster's cnet.so describes the 32em64t machine, whose mlx5_0 is not here.
work=$(mktemp -d /var/tmp/cnet-perf-XXXXXX)
trap 'rm -rf "$work"' EXIT
perf() { on_cluster srun --mpi=pmix --cnet-bind=none -N2 "$@"; }

out=$(perf "$CNET_BIN/cnet-perf" p2p --max-size 1048576 --iters 50 --save-baseline "$work/base.json")
echo "$out"
expect_eq "$(grep -cE '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' <<<"$out")" 9 "p2p rows for 8 B..1 MiB"
grep -q '^#  *size  *bandwidth  *bandwidth  *lat.avg  *lat.p50  *lat.p99$' <<<"$out" || fail "p2p header: $out"
/usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); r=b["reports"][0]; assert b["schema"]=="cnet.perf.baseline/v1" and r["mode"]=="p2p" and len(r["results"])==9 and all(x["bandwidth_gbytes"]>0 and x["latency_p99_us"]>=x["latency_p50_us"] for x in r["results"])' "$work/base.json" ||
  fail "baseline JSON is not a sane p2p report"

# Baselines 100x slower and 100x faster than this link: far outside any noise of a shared machine.
scale() { /usr/bin/python3 -c 'import json,sys; f=float(sys.argv[2]); b=json.load(open(sys.argv[1])); [x.update(bandwidth_gbytes=x["bandwidth_gbytes"]*f, latency_p50_us=x["latency_p50_us"]/f) for x in b["reports"][0]["results"]]; json.dump(b,open(sys.argv[1],"w"))' "$work/base.json" "$1"; }
scale 0.01
perf "$CNET_BIN/cnet-perf" p2p --max-size 1048576 --iters 50 --compare-baseline "$work/base.json" ||
  fail "a link 100x faster than its baseline counted as a regression"
scale 10000
if err=$(perf "$CNET_BIN/cnet-perf" p2p --max-size 1048576 --iters 50 --compare-baseline "$work/base.json" 2>&1 >/dev/null); then
  fail "a 100x faster baseline did not count as a regression"
fi
[[ $err == *"regressed: 512 KiB: bandwidth"* && $err == *"regressed: 8 B: bandwidth"* ]] || fail "regressed sizes not named: $err"

# The baseline recorded each host's NIC drivers; one changed since then is named, with the hint when
# the link regressed too.
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["reports"][0]; d=r["nic_drivers"]; assert set(d)=={"cn1","cn2"} and d["cn1"]==d["cn2"] and d["cn1"], d; d["cn2"]="eth0 old_driver 0.9"; json.dump({"schema":"cnet.perf.baseline/v1","reports":[r]},open(sys.argv[1],"w"))' "$work/base.json" ||
  fail "the baseline does not record both hosts' NIC drivers: $(cat "$work/base.json")"
err=$(perf "$CNET_BIN/cnet-perf" p2p --max-size 1048576 --iters 50 --compare-baseline "$work/base.json" 2>&1 >/dev/null) && fail "still 100x slower than the baseline"
grep -q "NIC driver or firmware changed since the baseline: cn2: eth0 old_driver 0.9 -> .*(a new driver can turn offloads" <<<"$err" ||
  fail "the driver change is not named: $err"

# Every size's result is checked against the expected sum: exact (rank order) in deterministic mode.
for reduce in fast deterministic; do
  out=$(perf -n4 "$CNET_BIN/cnet-perf" allreduce --reduce $reduce --min-size 1024 --max-size 262144 --iters 20 --json)
  /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["ranks"]==4 and len(r["results"])==5; assert all(abs(x["bus_gbytes"]-1.5*x["bandwidth_gbytes"])<1e-9 and x["wrong"]==0 for x in r["results"]), r' <<<"$out" ||
    fail "allreduce --reduce $reduce JSON wrong: $out"
done
out=$(perf -n2 "$CNET_BIN/cnet-perf" allreduce --min-size 64 --max-size 64 --iters 5)
grep -q '#wrong' <<<"$out" && grep -Eq '^ +64 +16 .* 0$' <<<"$out" || fail "allreduce table has no #wrong column: $out"

rc=0
"$CNET_BIN/cnet-perf" p2p --tolerance 2 >/dev/null 2>&1 || rc=$?
expect_eq "$rc" 2 "exit code for a bad --tolerance"

# --nic under srun: every rank measures over that interface, and the header says which.
out=$(perf "$CNET_BIN/cnet-perf" p2p --nic eth0 --max-size 4096 --iters 20) || fail "p2p --nic eth0: $out"
grep -q "^# cnet-perf p2p: 2 ranks on cn1,cn2 (transports .*, nic eth0)" <<<"$out" || fail "the header does not name the NIC: $out"

# --sweep: one measurement per value of a setting the tcp transport reads, on a new channel each time,
# the best by P99 marked; a value UCX cannot read stops every rank before any measuring.
out=$(perf "$CNET_BIN/cnet-perf" p2p --sweep UCX_TCP_TX_SEG_SIZE=8k,16k,64k --min-size 65536 --max-size 1048576 --iters 20 --json) ||
  fail "p2p --sweep: $out"
/usr/bin/python3 -c '
import json,sys
r=json.load(sys.stdin)
assert r["schema"]=="cnet.perf.sweep/v1" and r["variable"]=="UCX_TCP_TX_SEG_SIZE", r
assert [p["value"] for p in r["points"]]==["8k","16k","64k"], r
assert all(p["report"]["hosts"]==["cn1","cn2"] and len(p["report"]["results"])==3 and all(x["bandwidth_gbytes"]>0 for x in p["report"]["results"]) for p in r["points"]), r
best=r["best_by_p99"]; assert [b["bytes"] for b in best]==[65536,262144,1048576], best
for i,b in enumerate(best): assert min(p["report"]["results"][i]["latency_p99_us"] for p in r["points"])==next(p for p in r["points"] if p["value"]==b["value"])["report"]["results"][i]["latency_p99_us"], best
' <<<"$out" || fail "p2p --sweep JSON wrong: $out"
out=$(perf "$CNET_BIN/cnet-perf" p2p --sweep UCX_TCP_TX_SEG_SIZE=8k,64k --iters 20) || fail "p2p --sweep table: $out"
expect_eq "$(grep -c '<- best P99' <<<"$out")" 1 "one best value marked at the one default size: $out"
rc=0
err=$(perf "$CNET_BIN/cnet-perf" p2p --sweep UCX_TCP_TX_SEG_SIZE=8k,junk 2>&1) || rc=$?
expect_eq "$rc" 2 "exit code for a sweep value UCX refuses"
[[ $err == *"UCX refused UCX_TCP_TX_SEG_SIZE=junk"* ]] || fail "the refused value is not named: $err"
echo ok
