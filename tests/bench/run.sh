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
trap 'rm -f "$json"' EXIT
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
