#!/usr/bin/env bash
# Installs the dependencies (once), fetches and configures the matching Slurm source for the
# controller-side plugins (once, cached under build/slurm-source), and builds cnet into build/ (or
# $CNET_BUILD_DIR). Extra arguments go to cmake's configure step, e.g.
#   contrib/build.sh -DCNET_SANITIZE=address,undefined
#   contrib/build.sh -DCNET_SLURM_SOURCE=        (skip job_submit/cnet and gres/rdma)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
"$repo/contrib/install-deps.sh"
args=("$@")
if [[ " $* " != *" -DCNET_SLURM_SOURCE="* ]]; then
  args+=("-DCNET_SLURM_SOURCE=$("$repo/contrib/slurm-source.sh" "$repo/build/slurm-source")")
fi
cmake -S "$repo" -B "$build" "${args[@]}"
cmake --build "$build" -j "$(nproc)"
