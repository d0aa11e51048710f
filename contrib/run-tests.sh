#!/usr/bin/env bash
# The README's test command: build, run every test (against Debian's Slurm 22.05), then the same against
# every other supported Slurm release, built from source into /opt/slurm-<release> when it is not there
# yet (contrib/slurm-build.sh, in the background while the first tests run): cnet built against it, the
# unit tests and the whole cluster suite (label cluster-<release>) on a minicluster running that Slurm.
# Then build again in the other build types and run the unit tests there: Release (what packagers build)
# and Debug under AddressSanitizer + UndefinedBehaviorSanitizer (bad-input tests must not crash or leak).
# The project's own builds treat warnings as errors; a default or packaging build never does.
# Unit tests need nothing; cluster tests start and stop their own minicluster (as root).
# Then every parser a user or admin feeds is fuzzed for a bounded time (contrib/fuzz.sh).
# Extra arguments go to the first ctest, e.g. -L unit. CNET_SKIP_SANITIZE=1 / CNET_SKIP_RELEASE=1 /
# CNET_SKIP_FUZZ=1 / CNET_SKIP_SLURM_RELEASES=1 skip those passes; CNET_SLURM_RELEASES lists the other
# releases (default 24.11); CNET_FUZZ_SECONDS sets the time per fuzz target (default 30).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}
started=$SECONDS
stamp() { echo "== $1 ($(((SECONDS - started) / 60)) min so far)"; }

stamp "default build (RelWithDebInfo), every test"
CNET_BUILD_DIR=$build "$repo/contrib/build.sh" -DCNET_WARNINGS_AS_ERRORS=ON

# The other releases' Slurm is compiled (when not yet installed) while the default tests run: they leave
# the CPUs mostly idle, and nice keeps the compiler out of their way. The source is fetched and
# configured first, in the foreground, so no apt call runs beside the package test's apt-get install.
releases=()
[[ ${CNET_SKIP_SLURM_RELEASES:-0} == 1 ]] || read -r -a releases <<<"${CNET_SLURM_RELEASES:-24.11}"
declare -A slurm_build_pid
trap 'for p in "${slurm_build_pid[@]}"; do kill -- "-$p" 2>/dev/null || true; done' EXIT  # make and its compilers too
for release in "${releases[@]}"; do
  prefix=${CNET_SLURM_PREFIX:-/opt/slurm-$release}
  "$repo/contrib/slurm-source.sh" --version "$release" --prefix "$prefix" "$repo/build/slurm-source" >/dev/null
  setsid nice -n 19 "$repo/contrib/slurm-build.sh" --version "$release" --prefix "$prefix" --source-cache "$repo/build/slurm-source" \
    >"$build/slurm-build-$release.log" 2>&1 &
  slurm_build_pid[$release]=$!
done

ctest --test-dir "$build" --output-on-failure "$@"

for release in "${releases[@]}"; do
  stamp "Slurm $release (built from source into /opt/slurm-$release when not there yet), unit and cluster tests"
  wait "${slurm_build_pid[$release]}" || { cat "$build/slurm-build-$release.log" >&2; echo "run-tests: building Slurm $release failed" >&2; exit 1; }
  unset "slurm_build_pid[$release]"
  cat "$build/slurm-build-$release.log"
  CNET_BUILD_DIR=$build-slurm-$release "$repo/contrib/build.sh" --slurm "$release" -DCNET_WARNINGS_AS_ERRORS=ON
  ctest --test-dir "$build-slurm-$release" -L "^(unit|cluster-$release)\$" --output-on-failure
done

if [[ ${CNET_SKIP_RELEASE:-0} != 1 ]]; then
  stamp "Release build, unit tests"
  CNET_BUILD_DIR=$build-release "$repo/contrib/build.sh" -DCMAKE_BUILD_TYPE=Release -DCNET_WARNINGS_AS_ERRORS=ON
  ctest --test-dir "$build-release" -L unit --output-on-failure
fi

if [[ ${CNET_SKIP_SANITIZE:-0} != 1 ]]; then
  stamp "Debug build under address,undefined sanitizers, unit tests"
  CNET_BUILD_DIR=$build-sanitize "$repo/contrib/build.sh" -DCMAKE_BUILD_TYPE=Debug -DCNET_WARNINGS_AS_ERRORS=ON \
    -DCNET_SANITIZE=address,undefined -DCNET_WITH_CUDA=OFF
  # hwloc's libpciaccess plugin leaks when unloaded (its linux component reads PCI from sysfs anyway);
  # PMIx and UCX keep some allocations until exit (tests/lsan.supp).
  HWLOC_COMPONENTS=-pci LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0" \
    ctest --test-dir "$build-sanitize" -L unit --output-on-failure
  # The plugins and tools as slurmctld, slurmd, slurmstepd and srun run them: the sanitizer-built
  # plugins inside the real daemons (runtimes preloaded), the tools under the cluster tests that use
  # them. A report ends the daemon or tool, which fails its test; reports also land in $build-sanitize/asan.
  # A failed test is run once more: under the preloaded runtimes a batch job once stayed queued for 120 s
  # with no report, and 40 reruns here did not repeat it. The failure's output (the job, the daemons'
  # logs) stays in this log; a sanitizer report fails the pass whatever the rerun says.
  stamp "sanitizer-built plugins and tools on a minicluster"
  rm -rf "$build-sanitize/asan" && mkdir -p "$build-sanitize/asan"
  CNET_DAEMON_PRELOAD="$(gcc -print-file-name=libasan.so.8):$(gcc -print-file-name=libubsan.so.1)" \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$build-sanitize/asan/asan" \
  UBSAN_OPTIONS="print_stacktrace=1:log_path=$build-sanitize/asan/ubsan" HWLOC_COMPONENTS=-pci \
    ctest --test-dir "$build-sanitize" --output-on-failure --repeat until-pass:2 \
      -R '^cluster\.(up|down|spank_options|spank_task_env|spank_check|sbatch_example|job_submit|gres_rdma|cnet_pool|cnet_launch|cnet_perf|health_check|doctor_job)$' \
    || plugin_tests_failed=1
  # Shown also when a test failed: an aborted daemon's report is usually why.
  if compgen -G "$build-sanitize/asan/*" >/dev/null; then
    head -n 40 "$build-sanitize"/asan/*
    echo "run-tests: the sanitizers reported the errors above" >&2
    exit 1
  fi
  [[ -z ${plugin_tests_failed:-} ]] || exit 1
fi
if [[ ${CNET_SKIP_FUZZ:-0} != 1 ]]; then
  stamp "fuzzing every parser (clang, address,undefined), ${CNET_FUZZ_SECONDS:-30} s each"
  CNET_BUILD_DIR=$build "$repo/contrib/fuzz.sh"
fi
stamp "done"
