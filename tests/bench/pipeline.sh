#!/usr/bin/env bash
# Pipeline and data-parallel throughput against one process running the same model on the same input,
# in the same script: cnet-run --local N --verify times the single-process run right after the parallel
# one. Target: 2 stages >= 1.8x with enough micro-batches; the bubble measured (1 - speedup/stages) is
# printed beside GPipe's (p-1)/(m+p-1).
#   tests/bench/pipeline.sh [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build}
run=$build/bin/cnet-run
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows_per_mb=32
"$run" make-model --output "$work/model.safetensors" --layers 16 --hidden 512 2>/dev/null

measure() {  # measure RANKS SCHEME MICRO_BATCHES -> JSON summary
  "$run" make-input --output "$work/input.safetensors" --rows $(($3 * rows_per_mb)) --model "$work/model.safetensors" 2>/dev/null
  "$run" --local "$1" --parallel-scheme "$2" --model "$work/model.safetensors" --input "$work/input.safetensors" \
    --output "$work/out.safetensors" --micro-batch $rows_per_mb --verify --json 2>/dev/null
}
summarise() {  # summarise LABEL STAGES MICRO_BATCHES JSON [TARGET]
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
label, p, m, summary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
target = float(sys.argv[5]) if len(sys.argv) > 5 else None
v = summary["verify"]
ratio = summary["rows_per_second"] / v["single_process_rows_per_second"]
line = (f"pipeline: {label}: {summary['rows_per_second']:.0f} rows/s vs one process {v['single_process_rows_per_second']:.0f} rows/s: "
        f"ratio {ratio:.2f}x, {'bit-identical' if v['identical'] else 'DIFFERENT'}")
if p > 1:
    line += f"; bubble measured {1 - ratio / p:.3f} vs theory {(p - 1) / (m + p - 1):.3f}"
if target:
    line += f" (target >= {target}x: {'ok' if ratio >= target else 'MISSED'})"
print(line, flush=True)
sys.exit(0 if v["identical"] and (not target or ratio >= target) else 1)
PY
}
status=0
for m in 2 8 32; do
  summarise "2 stages, $m micro-batches of $rows_per_mb rows" 2 $m "$(measure 2 pipeline $m)" $([[ $m == 32 ]] && echo 1.8) || status=1
done
summarise "data parallel, 2 ranks, 32 micro-batches" 1 32 "$(measure 2 data 32)" || status=1
exit $status
