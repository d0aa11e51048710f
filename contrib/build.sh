#!/usr/bin/env bash
# Installs the dependencies (once) and builds cnet into build/ (or $CNET_BUILD_DIR).
# Extra arguments go to cmake's configure step, e.g. contrib/build.sh -DCNET_SANITIZE=address,undefined
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
"$repo/contrib/install-deps.sh"
cmake -S "$repo" -B "$build" "$@"
cmake --build "$build" -j "$(nproc)"
