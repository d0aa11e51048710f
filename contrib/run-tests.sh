#!/usr/bin/env bash
# The README's test command: build, then run every test. Unit tests need nothing; cluster tests start and
# stop their own minicluster (as root). Extra arguments go to ctest, e.g. -L unit.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
"$repo/contrib/build.sh"
ctest --test-dir "$build" --output-on-failure "$@"
