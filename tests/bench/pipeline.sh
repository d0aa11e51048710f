#!/usr/bin/env bash
# Pipeline and data-parallel throughput against one process running the same model on the same input,
# in the same script: cnet-run --local N --verify times the single-process run right after the parallel
# one; each target's ratio is the median of 3 runs. Targets: 2 stages >= 1.9x at 32 micro-batches, data
# parallel 2 ranks >= 1.9x, and the bubble within 1.2x of GPipe's (p-1)/(m+p-1) at 8 and 32 micro-batches.
# The bubble is what GPipe's theory counts: the share of the stages' time spent idle between the first
# micro-batch's start and the last one's end, measured from the run's --trace. It is printed beside the
# bubble the speed-up implies (1 - speedup/stages), which also counts what the theory leaves out: the
# stages computing slower beside each other than one process alone (on these 2 shared cores a stage's
# micro-batch takes about 1% longer beside another), so the two part where the machine, not the
# pipeline, costs. The ceiling (two independent one-rank runs at once against one alone) is printed to
# tell the machine's share of a missed speed-up target from the pipeline's.
# Each pipeline line also prints the pipeline's own cost, from the same trace: how much longer it took
# than an ideal pipeline replaying the compute times its stages measured (see with_trace_measures), so
# what the stages' speed did is told apart from what the transfers, the output and the progress path did.
# Then how cost grows: rows/s for 1, 2 and 4 stages, and for 1x, 4x and 16x the rows, so a reader sees
# where more stages stop helping here and that cost is linear in rows. Last, whether the machine was quiet
# enough to judge any target (the one-process rates it measured all within 10% of their median).
#   tests/bench/pipeline.sh [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build}
run=$build/bin/cnet-run
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Micro-batches of 128 rows, about 65 ms of compute per stage here, as real inference batches go: at 32
# rows (20 ms) the two shared cores' speed wandered by 10% between runs, more than the bubble measured.
rows_per_mb=128
# 16 residual blocks and a 16-way classifier head: the two stages split 8 | 8 + norm + head, equal to
# within 0.1% of the work, so what the bubble measures beyond GPipe's theory is the pipeline's own cost,
# not whole layers that cannot be split evenly (a 512-wide head alone would put stage 1 1.5% over
# stage 0, about 1.23x the theory at 32 micro-batches).
"$run" make-model --output "$work/model.safetensors" --layers 16 --hidden 512 --outputs 16 2>/dev/null

# Every one-process rate this run measures (the references and the ceiling's solo runs), for the quiet check.
solo_rates=$work/solo-rates
measure() {  # measure RANKS SCHEME MICRO_BATCHES -> JSON summary
  "$run" make-input --output "$work/input.safetensors" --rows $(($3 * rows_per_mb)) --model "$work/model.safetensors" 2>/dev/null
  "$run" --local "$1" --parallel-scheme "$2" --model "$work/model.safetensors" --input "$work/input.safetensors" \
    --output "$work/out.safetensors" --micro-batch $rows_per_mb --verify --json --trace "$work/trace.json" 2>/dev/null >"$work/last.json"
  /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["verify"]["single_process_rows_per_second"])' "$work/last.json" >>"$solo_rates"
  with_trace_measures "$work/last.json" "$work/trace.json"
}
# From the trace, for pipelines of 2+ stages: the bubble, the share of the stages' time idle between
# the first micro-batch's start and the last one's end; and the pipeline's own cost, how much longer the
# run took over that span than an ideal pipeline that moves activations in no time, replaying the very
# compute times each stage measured. The own cost leaves out the stages' speed, and the two shared cores'
# differences in it that come and go (the same stage's work took 253 ms on one and 302 ms on the other
# in one run here); what is left is the pipeline's doing: transfers not overlapped, the output, the
# progress path. A bubble past the theory with no own cost is the stages' imbalance, also printed: how
# much longer the slowest stage computed than the fastest, the fastest waiting that long on it. Here the
# two stages are equal work, but the two vCPUs are not equally fast: with --fixed-split stage 1 computed
# 0.7-4% longer than stage 0 run after run (from 2% less to 0.2% more with each stage pinned to the other
# CPU), which at 32 micro-batches, where the theory is 3% and 1.2x of it leaves 0.6%, alone missed the
# target. By default the layer at the cut swings to whichever stage keeps the two even (0-0.8% apart).
with_trace_measures() {  # with_trace_measures SUMMARY_JSON TRACE_JSON -> the summary with "bubble" and "own_cost"
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
summary, trace = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
stages = {}
for e in trace["traceEvents"]:
    if e["ph"] == "X" and "micro_batch" in e.get("args", {}):
        stages.setdefault(e["pid"], []).append((e["args"]["micro_batch"], e["ts"], e["ts"] + e["dur"]))
if summary["replicas"] == 1 and summary["stages"] > 1:
    spans = [sorted(stages[s]) for s in range(summary["stages"])]
    done = [0.0] * len(spans[0])  # when the previous stage finished each micro-batch, ideally
    for stage in spans:
        t = 0.0
        for j, (_, start, end) in enumerate(stage):
            t = max(t, done[j]) + (end - start)
            done[j] = t
    actual = max(end for _, _, end in spans[-1]) - min(start for _, start, _ in spans[0])
    busy = [sum(end - start for _, start, end in stage) for stage in spans]
    summary["bubble"] = 1 - sum(busy) / (len(spans) * actual)
    summary["imbalance"] = max(busy) / min(busy) - 1
    summary["own_cost"] = {"actual_us": actual, "ideal_us": done[-1], "fraction": 1 - done[-1] / actual}
print(json.dumps(summary))
PY
}
measure3() {  # measure3 RANKS SCHEME MICRO_BATCHES -> the JSON summary of the run with the median ratio of 3
  local runs=() i
  for i in 1 2 3; do runs+=("$(measure "$@")"); done
  /usr/bin/python3 -c '
import json, sys
runs = sorted((json.loads(a) for a in sys.argv[1:]), key=lambda s: s["rows_per_second"] / s["verify"]["single_process_rows_per_second"])
print(json.dumps(runs[1]))' "${runs[@]}"
}
summarise() {  # summarise LABEL STAGES MICRO_BATCHES JSON [TARGET [BUBBLE_TARGET]]
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
label, p, m, summary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
target = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None
bubble_target = float(sys.argv[6]) if len(sys.argv) > 6 else None
v = summary["verify"]
ratio = summary["rows_per_second"] / v["single_process_rows_per_second"]
line = (f"pipeline: {label}: {summary['rows_per_second']:.0f} rows/s vs one process {v['single_process_rows_per_second']:.0f} rows/s: "
        f"ratio {ratio:.2f}x, {'bit-identical' if v['identical'] else 'DIFFERENT'}")
theory = (p - 1) / (m + p - 1)
if p > 1:
    bubble, implied = summary["bubble"], 1 - ratio / p
    line += (f"; bubble {bubble:.3f} vs theory {theory:.3f} ({bubble / theory:.2f}x), "
             f"{implied:.3f} implied by the speed-up ({implied / theory:.2f}x)")
if "own_cost" in summary:
    line += (f"; own cost {100 * summary['own_cost']['fraction']:.1f}% of the run, "
             f"slowest stage computed {100 * summary['imbalance']:.1f}% longer than the fastest")
if target:
    line += f" (target >= {target}x: {'ok' if ratio >= target else 'MISSED'})"
if bubble_target:
    line += f" (target: bubble <= {bubble_target}x theory: {'ok' if summary['bubble'] <= bubble_target * theory else 'MISSED'})"
print(line, flush=True)
sys.exit(0 if v["identical"] and (not target or ratio >= target) and (not bubble_target or summary["bubble"] <= bubble_target * theory) else 1)
PY
}
# What two ranks can reach here at all: two independent one-rank runs at the same time against one
# alone (they share cores, caches and memory bandwidth, and each writes its output as the pipeline's
# writer does). Printed so that a speed-up missed because of the machine is told from one the pipeline missed.
ceiling() {
  "$run" make-input --output "$work/input.safetensors" --rows $((32 * rows_per_mb)) --model "$work/model.safetensors" 2>/dev/null
  local one=("$run" --local 1 --model "$work/model.safetensors" --input "$work/input.safetensors" --micro-batch $rows_per_mb --json)
  local ratios=() i
  for i in 1 2 3; do
    "${one[@]}" --output "$work/solo.safetensors" >"$work/solo.json" 2>/dev/null
    "${one[@]}" --output "$work/a.safetensors" >"$work/a.json" 2>/dev/null &
    "${one[@]}" --output "$work/b.safetensors" >"$work/b.json" 2>/dev/null
    wait $!
    /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["rows_per_second"])' "$work/solo.json" >>"$solo_rates"
    ratios+=("$(/usr/bin/python3 -c '
import json, sys
solo, a, b = (json.load(open(f)) for f in sys.argv[1:])
print((a["rows_per_second"] + b["rows_per_second"]) / solo["rows_per_second"])' "$work/solo.json" "$work/a.json" "$work/b.json")")
  done
  /usr/bin/python3 -c 'import sys; r = sorted(map(float, sys.argv[1:])); print(f"pipeline: ceiling: two independent one-rank runs at once reach {r[1]:.2f}x one alone (median of 3): the most 2 ranks can reach on this machine", flush=True)' "${ratios[@]}"
}
ceiling

status=0
for m in 2 8 32; do
  targets=()
  [[ $m == 32 ]] && targets=(1.9 1.2)
  [[ $m == 8 ]] && targets=("" 1.2)
  summarise "2 stages, $m micro-batches of $rows_per_mb rows, median of 3" 2 $m "$(measure3 2 pipeline $m)" "${targets[@]}" || status=1
done
summarise "data parallel, 2 ranks, 32 micro-batches, median of 3" 1 32 "$(measure3 2 data 32)" 1.9 || status=1

# How cost grows. Every run is still checked bit-identical against one process.
scaling() {  # scaling TITLE NOTE LABEL=JSON...
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
title, note, runs = sys.argv[1], sys.argv[2], [a.split("=", 1) for a in sys.argv[3:]]
first = json.loads(runs[0][1])
cells = []
for label, text in runs:
    s = json.loads(text)
    cells.append(f"{label} {s['rows_per_second']:.0f} rows/s ({s['rows_per_second'] / first['rows_per_second']:.2f}x"
                 f"{'' if s['verify']['identical'] else ', DIFFERENT'})")
print(f"pipeline: {title}: " + ", ".join(cells) + (f"; {note}" if note else ""), flush=True)
sys.exit(0 if all(json.loads(t)["verify"]["identical"] for _, t in runs) else 1)
PY
}
cpus=$(nproc)
scaling "stages, 32 micro-batches" "$( ((cpus >= 4)) || echo "4 stages on $cpus CPUs are oversubscribed")" \
  "1 stage=$(measure 1 pipeline 32)" "2 stages=$(measure 2 pipeline 32)" "4 stages=$(measure 4 pipeline 32)" || status=1
scaling "rows, 2 stages, micro-batches of $rows_per_mb rows" "flat rows/s is cost linear in rows (the bubble shrinks as micro-batches grow)" \
  "$((8 * rows_per_mb)) rows=$(measure 2 pipeline 8)" "$((32 * rows_per_mb)) rows=$(measure 2 pipeline 32)" \
  "$((128 * rows_per_mb)) rows=$(measure 2 pipeline 128)" || status=1
# Was the machine quiet? The ratios divide by a one-process rate measured seconds apart from the parallel
# run; where that rate itself swings, so do they (past 2x on 2 ranks, which no real speed-up reaches).
# A target counts as met only from a quiet run: every one-process rate within 10% of the run's median.
if /usr/bin/python3 - "$solo_rates" <<'PY'
import statistics, sys
rates = [float(line) for line in open(sys.argv[1]) if line.strip()]
median = statistics.median(rates)
spread = max(abs(r - median) for r in rates) / median
verdict = ("quiet: the targets above can be judged" if spread <= 0.10 else
           "NOT quiet: the ratios above swing with it, so judge no target on this run; rerun when the machine is idle")
print(f"pipeline: machine: one process ran at {min(rates):.0f}-{max(rates):.0f} rows/s over {len(rates)} runs here, "
      f"at most {100 * spread:.0f}% from their median: {verdict}", flush=True)
sys.exit(0 if spread <= 0.10 else 1)
PY
then :; else status=1; fi
exit $status
