#!/usr/bin/env bash
# GPU checks for a machine with an NVIDIA GPU: build with CUDA/NCCL and run each check once.
#   tests/gpu/run.sh [BUILD_DIR]     (default build-gpu/)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$repo/build-gpu}
nvidia-smi -L || { echo "tests/gpu/run.sh: no NVIDIA GPU here"; exit 1; }
cmake -S "$repo" -B "$build" -DCNET_WITH_CUDA=ON -DCNET_BUILD_TESTS=ON
cmake --build "$build" -j "$(nproc)" --target nccl_check
"$build/bin/nccl_check"
