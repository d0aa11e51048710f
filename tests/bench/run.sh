#!/usr/bin/env bash
# Runs cnet's benchmarks and prints each result as a ratio against its peer from the same run.
#   tests/bench/run.sh [BUILD_DIR]     (default build/)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)  # absolute: the minicluster writes it into its configuration
fixtures=${CNET_FIXTURES_DIR:-$repo/tests/fixtures}

# topology: full discovery + every emitter on the largest fixture; target < 50 ms median.
largest=$(ls -S "$fixtures"/hwloc/*.xml | head -n1)
echo "== topology: $(basename "$largest")"
json=$(mktemp)
cleanup() { rm -f "$json"; }
trap cleanup EXIT
"$build/bin/bench_topology" "$largest" --benchmark_repetitions=15 --benchmark_report_aggregates_only=true \
  --benchmark_out="$json" --benchmark_out_format=json
/usr/bin/python3 - "$json" <<'PY'
import json, sys
runs = {b["run_name"]: b["real_time"] for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
cnet, hwloc, lstopo = runs["CnetDiscoverAndEmitAll"], runs["HwlocLoadAndExportXml"], runs["LstopoOfXmlCommand"]
print(f"topology: cnet discover+all emitters {cnet:.2f} ms median (target < 50 ms: {'ok' if cnet < 50 else 'MISSED'})")
print(f"topology: ratio to hwloc load+export in-process {cnet / hwloc:.2f}x, to `lstopo --of xml` command {cnet / lstopo:.2f}x")
sys.exit(0 if cnet < 50 else 1)
PY

# topology at scale: a synthetic 2048-GPU export, each format in its own process next to hwloc
# loading and re-exporting the same file; target every format < 1 s and < 200 MB.
echo "== topology: 2048-GPU synthetic export"
"$build/bin/bench_topology_scale" 3

# templates: the catalogue parse is linear in the file size (job_submit/cnet rereads it in the background).
echo "== templates: catalogue parse, 256 KiB vs 1 MiB"
"$build/bin/bench_templates"

# spank: what cnet.so adds to a step launch, `srun -N2 true` with and without it in plugstack.conf,
# alternating so both see the same machine load; target <= 1.05x.
echo "== spank: srun -N2 true with and without cnet.so (needs root)"
export CNET_MINICLUSTER_DIR=$build/bench-minicluster CNET_BUILD_DIR=$build
mc=$repo/contrib/minicluster
"$mc" down >/dev/null
# On the host's network: the cross-node transport peers below (ucx_perftest, Open MPI) run over loopback too.
"$mc" up 2 --host-net >/dev/null
cleanup() { rm -f "$json"; "$mc" down >/dev/null; }
plugstack=$CNET_MINICLUSTER_DIR/etc/plugstack.conf
cp "$plugstack" "$plugstack.with"
launch_us() {
  local start=$(date +%s%N)
  "$mc" run -- srun -N2 true
  echo $((($(date +%s%N) - start) / 1000))
}
with=() without=()
for i in $(seq 1 21); do
  cp "$plugstack.with" "$plugstack"
  with+=("$(launch_us)")
  : >"$plugstack"
  without+=("$(launch_us)")
  printf '  run %2d: with %6d us, without %6d us\n' "$i" "${with[-1]}" "${without[-1]}"
done
cp "$plugstack.with" "$plugstack"
/usr/bin/python3 - "${with[*]}" "${without[*]}" <<'PY'
import statistics, sys
w, wo = (statistics.median(map(int, a.split())) for a in sys.argv[1:3])
print(f"spank: median launch {w / 1000:.1f} ms with cnet.so, {wo / 1000:.1f} ms without: ratio {w / wo:.3f}x (target <= 1.05x: {'ok' if w / wo <= 1.05 else 'MISSED'})")
PY

# transport, same node: cnet-perf --local 2 in its default mode (shared memory, a dead peer still
# detected by its process exit) against plain ucx_perftest (shared memory) and Open MPI; across two
# minicluster nodes (tcp over loopback, UCX's peer failure handling) against ucx_perftest -e.
echo "== transport: cnet-perf vs ucx_perftest (p2p) and Open MPI (allreduce)"
port=$((20000 + RANDOM % 10000))
perftest() {  # perftest TEST SIZE ITERS [ARGS...] -> ucx_perftest's "Final:" line
  local test=$1 size=$2 iters=$3 server line
  shift 3
  ucx_perftest -p "$port" "$@" >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  line=$(ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$iters" "$@" 2>/dev/null | grep '^Final:' || true)
  wait "$server" 2>/dev/null || true
  echo "$line"
}
compact() { /usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))'; }  # one line per report
local_perf() { "$build/bin/cnet-perf" --local 2 "$@" --json 2>/dev/null | compact; }
cnet_perf() { "$mc" run -- srun --mpi=pmix --cnet-bind=none -N2 -n2 "$build/bin/cnet-perf" "$@" --json 2>/dev/null; }
# p2p: alternating rounds, medians compared. One round of either tool swings 10-20% on this shared
# 2-vCPU machine (same node 8-14 GB/s, across nodes 3.2-6.7 GB/s), and medians of 3 or 5 missed the
# 0.95x target by chance about every other run while the two tools' distributions overlapped; the
# median of 9 each keeps that chance small at under a minute.
p2p_rounds=9
shm_bw=() ucx_shm_bw=()
for round in $(seq 1 $p2p_rounds); do
  shm_bw+=("$(local_perf p2p --min-size 4194304 --max-size 4194304 --iters 400)")
  ucx_shm_bw+=("$(perftest tag_bw 4194304 400)")
  /usr/bin/python3 - "${shm_bw[-1]}" "${ucx_shm_bw[-1]}" "$round" <<'PY'
import json, sys
bw, ucx_bw, n = sys.argv[1:4]
report = json.loads(bw)
print(f"  same-node p2p round {n}: 4 MiB cnet-perf --local 2 {report['results'][0]['bandwidth_gbytes']:.2f} GB/s "
      f"({report['transports']}), ucx_perftest {float(ucx_bw.split()[6]) * 2**20 / 1e9:.2f} GB/s")
PY
done
p2p_bw=() ucx_bw=() p2p_lat=() ucx_lat=()
for round in $(seq 1 $p2p_rounds); do
  p2p_bw+=("$(cnet_perf p2p --min-size 4194304 --max-size 4194304 --iters 400 | compact)")
  ucx_bw+=("$(perftest tag_bw 4194304 400 -e)")
  p2p_lat+=("$(cnet_perf p2p --min-size 8 --max-size 8 --iters 20000 --warmup 1000 | compact)")
  ucx_lat+=("$(perftest tag_lat 8 20000 -e)")
  /usr/bin/python3 - "${p2p_bw[-1]}" "${ucx_bw[-1]}" "${p2p_lat[-1]}" "${ucx_lat[-1]}" "$round" <<'PY'
import json, sys
bw, ucx_bw, lat, ucx_lat, n = sys.argv[1:6]
row = lambda text: json.loads(text)["results"][0]
print(f"  cross-node p2p round {n}: 4 MiB cnet-perf {row(bw)['bandwidth_gbytes']:.2f} GB/s, ucx_perftest -e {float(ucx_bw.split()[6]) * 2**20 / 1e9:.2f} GB/s; "
      f"8 B P50 cnet-perf {row(lat)['latency_p50_us']:.2f} us, ucx_perftest -e {float(ucx_lat.split()[2]):.2f} us")
PY
done
# allreduce on one node: 3 alternating rounds (its margins are wide).
ar_fast=() ar_det=() mpi_us=()
for round in 1 2 3; do
  ar_fast+=("$(local_perf allreduce --min-size 67108864 --max-size 67108864 --iters 10 --warmup 4 --reduce fast)")
  ar_det+=("$(local_perf allreduce --min-size 67108864 --max-size 67108864 --iters 10 --warmup 4 --reduce deterministic)")
  mpi_us+=("$(mpirun --allow-run-as-root --oversubscribe -np 2 "$build/bin/bench_mpi_allreduce" 67108864 10 2>/dev/null | tail -n1)")
  /usr/bin/python3 - "${ar_fast[-1]}" "${ar_det[-1]}" "${mpi_us[-1]}" "$round" <<'PY'
import json, sys
fast, det, mpi, n = sys.argv[1:5]
ms = lambda text: json.loads(text)["results"][0]["latency_avg_us"] / 1000
print(f"  same-node allreduce round {n}: 64 MiB fast {ms(fast):.1f} ms, deterministic {ms(det):.1f} ms, Open MPI {float(mpi) / 1000:.1f} ms")
PY
done
ar_tcp=$(cnet_perf allreduce --min-size 67108864 --max-size 67108864 --iters 10 --warmup 4)
echo "  cnet-perf allreduce 64 MiB across nodes done"
mpi_tcp_us=$(mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -np 2 "$build/bin/bench_mpi_allreduce" 67108864 10 2>/dev/null | tail -n1)
echo "  Open MPI allreduce 64 MiB over tcp: ${mpi_tcp_us} us"
join() { local IFS=$'\n'; echo "$*"; }  # one value per line: JSON documents are single lines
/usr/bin/python3 - "$(join "${shm_bw[@]}")" "$(join "${ucx_shm_bw[@]}")" "$(join "${p2p_bw[@]}")" "$(join "${ucx_bw[@]}")" \
  "$(join "${p2p_lat[@]}")" "$(join "${ucx_lat[@]}")" \
  "$(join "${ar_fast[@]}")" "$(join "${ar_det[@]}")" "$ar_tcp" "$(join "${mpi_us[@]}")" "$mpi_tcp_us" <<'PY'
import json, statistics, sys
shm_bw, ucx_shm_bw, p2p_bw, ucx_bw, p2p_lat, ucx_lat, ar_fast, ar_det, ar_tcp, mpi_us, mpi_tcp_us = sys.argv[1:12]
verdict = lambda ok: "ok" if ok else "MISSED"
# ucx_perftest Final: iters lat50 lat_avg lat_overall bw_avg(MB/s) bw_overall(MB/s) ... ; MB = 2^20 bytes
ucx_gbytes = lambda line: float(line.split()[6]) * 2**20 / 1e9
first = lambda text, field: json.loads(text)["results"][0][field]
median = lambda lines, value: statistics.median(value(l) for l in lines.splitlines())
rounds = len(p2p_bw.splitlines())
cnet_shm = median(shm_bw, lambda l: first(l, "bandwidth_gbytes"))
ucx_shm = median(ucx_shm_bw, ucx_gbytes)
r = cnet_shm / ucx_shm
print(f"transport: same-node p2p 4 MiB {cnet_shm:.2f} GB/s (peer failures detected) vs plain ucx_perftest {ucx_shm:.2f} GB/s, "
      f"medians of {rounds} alternating rounds: ratio {r:.2f}x (target >= 0.95x: {verdict(r >= 0.95)})")
cnet_bw, ucx_tcp_bw = median(p2p_bw, lambda l: first(l, "bandwidth_gbytes")), median(ucx_bw, ucx_gbytes)
r = cnet_bw / ucx_tcp_bw
print(f"transport: cross-node p2p 4 MiB {cnet_bw:.2f} GB/s vs ucx_perftest -e {ucx_tcp_bw:.2f} GB/s, "
      f"medians of {rounds} alternating rounds: ratio {r:.2f}x (target >= 0.95x: {verdict(r >= 0.95)})")
cnet_p50, ucx_p50 = median(p2p_lat, lambda l: first(l, "latency_p50_us")), median(ucx_lat, lambda l: float(l.split()[2]))
lat = cnet_p50 / ucx_p50
print(f"transport: cross-node p2p 8 B latency P50 {cnet_p50:.2f} us vs ucx_perftest -e {ucx_p50:.2f} us, "
      f"medians of {rounds} alternating rounds: ratio {lat:.2f}x (target <= 1.10x: {verdict(lat <= 1.10)})")
fast_us, det_us = (median(runs, lambda l: first(l, "latency_avg_us")) for runs in (ar_fast, ar_det))
mpi = median(mpi_us, float)
for name, us in (("fast", fast_us), ("deterministic", det_us)):
    r = mpi / us
    print(f"transport: same-node allreduce 64 MiB on 2 ranks, --reduce {name} {us / 1000:.1f} ms vs Open MPI "
          f"{mpi / 1000:.1f} ms, medians of 3: speed ratio {r:.2f}x (target >= 1.0x: {verdict(r >= 1.0)})")
print(f"transport: deterministic vs fast allreduce: {det_us / fast_us:.2f}x the time (target <= 1.1x: {verdict(det_us / fast_us <= 1.1)})")
tcp_us = first(ar_tcp, "latency_avg_us")
print(f"transport: cross-node allreduce 64 MiB on 2 ranks over tcp {tcp_us / 1000:.1f} ms vs Open MPI over tcp "
      f"{float(mpi_tcp_us) / 1000:.1f} ms: speed ratio {float(mpi_tcp_us) / tcp_us:.2f}x")
PY

# pipeline: cnet-run on 2 stages / 2 replicas vs one process on the same model and input, same script.
# The pipeline needs no Slurm: with the minicluster's daemons still running, its two busy ranks shared
# the two cores with them while the one process it is measured against had a core to spare (inside this
# script 2 stages reached 1.87-1.89x in four runs, on their own 1.91-1.92x in the same hour).
"$mc" down >/dev/null
cleanup() { rm -f "$json"; }
echo "== pipeline: cnet-run --local 2 vs one process"
bash "$repo/tests/bench/pipeline.sh" "$build"

# Real models: ONNX resnet50 and vit_b_16 against PyTorch itself, and resnet50 in 2 stages.
echo "== onnx: cnet-run vs PyTorch, and 2 stages vs one process"
bash "$repo/tests/bench/onnx_models.sh" "$build"
