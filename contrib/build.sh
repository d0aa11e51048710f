#!/usr/bin/env bash
# Installs the dependencies (once), fetches and configures the matching Slurm source for the
# controller-side plugins (once, cached under build/slurm-source), and builds cnet into build/ (or
# $CNET_BUILD_DIR). Extra arguments go to cmake's configure step, e.g.
#   contrib/build.sh -DCNET_SANITIZE=address,undefined
#   contrib/build.sh -DCNET_SLURM_SOURCE=        (skip job_submit/cnet and gres/rdma)
#   contrib/build.sh --slurm 24.11               (against Slurm 24.11, built from source into
#                                                 $CNET_SLURM_PREFIX, default /opt/slurm-24.11, first
#                                                 when it is not there)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
cache=$repo/build/slurm-source
"$repo/contrib/install-deps.sh"
release=""
if [[ ${1:-} == --slurm ]]; then
  release=${2:?--slurm needs MAJOR.MINOR, e.g. 24.11}
  shift 2
fi
args=("$@")
if [[ -n $release ]]; then
  prefix=$("$repo/contrib/slurm-build.sh" --version "$release" --prefix "${CNET_SLURM_PREFIX:-/opt/slurm-$release}" --source-cache "$cache")
  args+=("-DCNET_SLURM_PREFIX=$prefix")
  [[ " $* " == *" -DCNET_SLURM_SOURCE="* ]] ||
    args+=("-DCNET_SLURM_SOURCE=$("$repo/contrib/slurm-source.sh" --version "$release" --prefix "$prefix" "$cache")")
elif [[ " $* " != *" -DCNET_SLURM_SOURCE="* ]]; then
  args+=("-DCNET_SLURM_SOURCE=$("$repo/contrib/slurm-source.sh" "$cache")")
fi
cmake -S "$repo" -B "$build" "${args[@]}"
cmake --build "$build" -j "$(nproc)"
