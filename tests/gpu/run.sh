#!/usr/bin/env bash
# GPU checks for a machine with an NVIDIA GPU, one PASS/FAIL/SKIP line each, under 8 minutes on one GPU:
#   tests/gpu/run.sh [BUILD_DIR]     (default build-gpu/)
# CUDA/NCCL found; cuBLAS GEMM against the GPU's peak; NcclChannel on one rank; a 1-stage GPU run against
# the CPU within tolerance (F32 and F16 weights); 2 stages sharing the GPU (host-staged) bit-identical to 1 stage on it; a CPU
# stage feeding a GPU stage; 2 and 3 stages on 2 GPUs over NCCL when there are two, and 2 stages on 2 GPUs against 1 (transfers overlapping
# compute); throughput GPU against CPU.
# Exit 1 when any check failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build-gpu}
failed=0
result() { echo "$1: $2"; [[ $1 != FAIL ]] || failed=1; }

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || true
((gpus > 0)) || { result FAIL "no NVIDIA GPU here (nvidia-smi -L)"; exit 1; }
# Only what the checks need: no Slurm plugins or test suites (a GPU machine may have no Slurm).
if ! cmake -S "$repo" -B "$build" -DCNET_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCNET_BUILD_TESTS=OFF -DCNET_BUILD_SLURM_PLUGINS=OFF \
       >"$build.configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" --target cnet-run cnet_cuda_stage nccl_check gemm_check >"$build.build.log" 2>&1; then
  tail -n 30 "$build.configure.log" "$build.build.log" 2>/dev/null
  result FAIL "CUDA/NCCL build (contrib/install-deps.sh installs the rest; CUDA under /usr/local/cuda)"
  exit 1
fi
result PASS "CUDA, cuBLAS and NCCL found and built; $gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
bin=$build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

out=$("$bin/gemm_check" 2>&1) && result PASS "$out" || result FAIL "$out (want >= 0.5x peak)"
out=$(timeout 120 "$bin/nccl_check" 2>&1) && result PASS "$out" || result FAIL "$out"

run() { timeout 180 "$bin/cnet-run" --name gpu --model "$work/m.st" --input "$work/i.st" "$@"; }
rate() { /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["rows_per_second"]))'; }
"$bin/cnet-run" make-model -o "$work/m.st" --layers 8 --hidden 1024 >/dev/null &&
  "$bin/cnet-run" make-input -o "$work/i.st" --rows 8192 --model "$work/m.st" >/dev/null || { result FAIL "making the model"; exit 1; }

out=$(run --local 1 --gpu-per-stage 1 --micro-batch 256 --output "$work/gpu1.st" --verify --verify-tolerance 1e-3 --json 2>&1)
if [[ $? == 0 ]] && grep -q "bit-identical to one process running the whole model on this GPU" <<<"$out" &&
   grep -q "within --verify-tolerance" <<<"$out"; then
  result PASS "1 stage on the GPU: $(grep -o 'against the CPU path: [^;]*' <<<"$out")"
else
  result FAIL "1 stage on the GPU against the CPU: $(tail -n 5 <<<"$out")"
fi

"$bin/cnet-run" make-model -o "$work/m16.st" --layers 8 --hidden 1024 --dtype F16 >/dev/null 2>&1
out=$(timeout 180 "$bin/cnet-run" --name gpu16 --model "$work/m16.st" --input "$work/i.st" --local 1 --gpu-per-stage 1 --micro-batch 256 \
  --output "$work/gpu16.st" --verify --verify-tolerance 2e-2 2>&1)
if [[ $? == 0 ]] && grep -q "bit-identical to one process running the whole model on this GPU" <<<"$out"; then
  result PASS "F16 weights kept 16-bit on the GPU: $(grep -o 'against the CPU path: [^;]*' <<<"$out")"
else
  result FAIL "F16 weights on the GPU: $(tail -n 5 <<<"$out")"
fi

out=$(CUDA_VISIBLE_DEVICES=0 run --local 2 --gpu-per-stage 1 --micro-batch 256 --output "$work/gpu2.st" 2>&1)
if [[ $? == 0 ]] && cmp -s "$work/gpu1.st" "$work/gpu2.st"; then
  result PASS "2 stages on one GPU (host-staged over UCX) bit-identical to 1 stage on it"
else
  result FAIL "2 stages on one GPU: $(tail -n 5 <<<"$out")"
fi

out=$(CUDA_VISIBLE_DEVICES=0 run --local 2 --stage-devices cpu,gpu --micro-batch 256 --output "$work/mixed.st" --verify --verify-tolerance 1e-3 2>&1)
if [[ $? == 0 ]] && grep -q "bit-identical\|within --verify-tolerance\|values differ" <<<"$out"; then
  result PASS "a CPU stage feeding a GPU stage (host memory over UCX), against the CPU within 1e-3"
else
  result FAIL "CPU and GPU stages in one job: $(tail -n 5 <<<"$out")"
fi

if ((gpus >= 2)); then
  out=$(CUDA_VISIBLE_DEVICES=0,1 run --local 2 --gpu-per-stage 1 --micro-batch 256 --output "$work/gpu2x2.st" 2>&1)
  [[ $? == 0 ]] && cmp -s "$work/gpu1.st" "$work/gpu2x2.st" && grep -q "activations: GPU to GPU over NCCL" <<<"$out" &&
    result PASS "2 stages on 2 GPUs, activations over NCCL, bit-identical to 1 stage" ||
    result FAIL "2 stages on 2 GPUs: $(tail -n 5 <<<"$out")"
  # NCCL receives and sends overlap compute on streams of their own: 2 stages on 2 GPUs against 1 GPU
  # (near 2x when they do, near 1x if the stages ran in lockstep with their transfers).
  one=$(run --local 1 --gpu-per-stage 1 --micro-batch 256 --output "$work/r1.st" --json 2>/dev/null | rate)
  two=$(CUDA_VISIBLE_DEVICES=0,1 run --local 2 --gpu-per-stage 1 --micro-batch 256 --output "$work/r2.st" --json 2>/dev/null | rate)
  [[ -n $one && -n $two ]] &&
    result INFO "2 stages on 2 GPUs over NCCL: $two rows/s vs 1 GPU $one rows/s: $(/usr/bin/python3 -c "print(f'{$two/$one:.2f}x')")" ||
    result FAIL "2 stages on 2 GPUs: the throughput runs did not finish"
  # Stages 0 and 2 both on GPU 0: two NCCL pairs, each its own communicator (one holding GPU 0 twice
  # would be refused by NCCL).
  out=$(CUDA_VISIBLE_DEVICES=0,1 run --local 3 --gpu-per-stage 1 --micro-batch 256 --output "$work/gpu3x2.st" 2>&1)
  [[ $? == 0 ]] && cmp -s "$work/gpu1.st" "$work/gpu3x2.st" &&
    result PASS "3 stages on 2 GPUs (GPU 0 in two NCCL pairs), bit-identical to 1 stage" ||
    result FAIL "3 stages on 2 GPUs: $(tail -n 5 <<<"$out")"
else
  result SKIP "2 and 3 stages on 2 GPUs (activations over NCCL): only one GPU here"
fi

gpu_rate=$(run --local 1 --gpu-per-stage 1 --micro-batch 256 --output "$work/g.st" --json 2>/dev/null | rate)
cpu_rate=$(run --local 1 --threads "$(nproc)" --micro-batch 256 --output "$work/c.st" --json 2>/dev/null | rate)
if [[ -n $gpu_rate && -n $cpu_rate ]]; then
  result INFO "throughput, 8 x 1024-wide blocks, 8192 rows: GPU $gpu_rate rows/s, CPU ($(nproc) threads) $cpu_rate rows/s: $(/usr/bin/python3 -c "print(f'{$gpu_rate/$cpu_rate:.1f}x')")"
else
  result FAIL "throughput runs did not finish"
fi
exit $failed
