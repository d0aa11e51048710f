#!/usr/bin/env bash
# The README's test command: build, run every test, then run the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (bad-input tests must not crash or leak).
# Unit tests need nothing; cluster tests start and stop their own minicluster (as root).
# Extra arguments go to the first ctest, e.g. -L unit. CNET_SKIP_SANITIZE=1 skips the second pass.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
"$repo/contrib/build.sh"
ctest --test-dir "$build" --output-on-failure "$@"

if [[ ${CNET_SKIP_SANITIZE:-0} != 1 ]]; then
  echo "== unit tests under address,undefined sanitizers"
  CNET_BUILD_DIR=$build-sanitize "$repo/contrib/build.sh" -DCNET_SANITIZE=address,undefined -DCNET_WITH_CUDA=OFF -DCNET_SLURM_SOURCE=
  # hwloc's libpciaccess plugin leaks when unloaded (its linux component reads PCI from sysfs anyway);
  # PMIx and UCX keep some allocations until exit (tests/lsan.supp).
  HWLOC_COMPONENTS=-pci LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0" \
    ctest --test-dir "$build-sanitize" -L unit --output-on-failure
fi
