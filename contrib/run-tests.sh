#!/usr/bin/env bash
# The README's test command: build, run every test, then build again in the other build types and run
# the unit tests there: Release (what packagers build) and Debug under AddressSanitizer +
# UndefinedBehaviorSanitizer (bad-input tests must not crash or leak). The project's own builds treat
# warnings as errors; a default or packaging build never does.
# Unit tests need nothing; cluster tests start and stop their own minicluster (as root).
# Extra arguments go to the first ctest, e.g. -L unit. CNET_SKIP_SANITIZE=1 / CNET_SKIP_RELEASE=1 skip
# those passes.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
started=$SECONDS
stamp() { echo "== $1 ($(((SECONDS - started) / 60)) min so far)"; }

stamp "default build (RelWithDebInfo), every test"
CNET_BUILD_DIR=$build "$repo/contrib/build.sh" -DCNET_WARNINGS_AS_ERRORS=ON
ctest --test-dir "$build" --output-on-failure "$@"

if [[ ${CNET_SKIP_RELEASE:-0} != 1 ]]; then
  stamp "Release build, unit tests"
  CNET_BUILD_DIR=$build-release "$repo/contrib/build.sh" -DCMAKE_BUILD_TYPE=Release -DCNET_WARNINGS_AS_ERRORS=ON
  ctest --test-dir "$build-release" -L unit --output-on-failure
fi

if [[ ${CNET_SKIP_SANITIZE:-0} != 1 ]]; then
  stamp "Debug build under address,undefined sanitizers, unit tests"
  CNET_BUILD_DIR=$build-sanitize "$repo/contrib/build.sh" -DCMAKE_BUILD_TYPE=Debug -DCNET_WARNINGS_AS_ERRORS=ON \
    -DCNET_SANITIZE=address,undefined -DCNET_WITH_CUDA=OFF -DCNET_SLURM_SOURCE=
  # hwloc's libpciaccess plugin leaks when unloaded (its linux component reads PCI from sysfs anyway);
  # PMIx and UCX keep some allocations until exit (tests/lsan.supp).
  HWLOC_COMPONENTS=-pci LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0" \
    ctest --test-dir "$build-sanitize" -L unit --output-on-failure
fi
stamp "done"
