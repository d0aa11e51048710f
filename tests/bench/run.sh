#!/usr/bin/env bash
# Runs cnet's benchmarks and prints each result as a ratio against its peer from the same run.
#   tests/bench/run.sh [BUILD_DIR]     (default build/)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build}
fixtures=${CNET_FIXTURES_DIR:-$repo/../shared/fixtures}

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

# spank: what cnet.so adds to a step launch, `srun -N2 true` with and without it in plugstack.conf,
# alternating so both see the same machine load; target <= 1.05x.
echo "== spank: srun -N2 true with and without cnet.so (needs root)"
export CNET_MINICLUSTER_DIR=$build/bench-minicluster CNET_BUILD_DIR=$build
mc=$repo/contrib/minicluster
"$mc" down >/dev/null
"$mc" up 2 >/dev/null
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
