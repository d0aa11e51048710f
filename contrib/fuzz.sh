#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, address + undefined sanitizers) and runs each for a bounded time
# over a scratch copy of its seed corpus (tests/fuzz/corpus/<target>), as many at once as there are cores;
# fails when any target crashes, leaks or hangs, leaving the input that caused it in $build/crashes/.
#   contrib/fuzz.sh [SECONDS_PER_TARGET]     (default $CNET_FUZZ_SECONDS or 30)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CNET_BUILD_DIR:-$repo/build}-fuzz
seconds=${1:-${CNET_FUZZ_SECONDS:-30}}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: seconds per target must be a whole number, not '$seconds'" >&2; exit 2; }
"$repo/contrib/install-deps.sh" >/dev/null
cmake -S "$repo" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCNET_FUZZ=ON -DCNET_SANITIZE=address,undefined -DCNET_BUILD_TESTS=OFF -DCNET_WITH_CUDA=OFF -DCNET_SLURM_SOURCE= \
  -DCNET_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target fuzz_all
mkdir -p "$build/crashes"
failed=()
# One target over a scratch copy of its corpus; its exit status is the verdict.
fuzz_one() {
  local target=$1 work rc=0
  work=$(mktemp -d)
  cp -r "$repo/tests/fuzz/corpus/$target/". "$work/"
  # hwloc's libpciaccess plugin leaks when unloaded; PMIx/UCX are not loaded by these targets.
  HWLOC_COMPONENTS=-pci ASAN_OPTIONS=allocator_may_return_null=1 \
    "$build/bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$build/crashes/$target-" -print_final_stats=1 "$work" 2>"$build/fuzz_$target.log" || rc=$?
  rm -rf "$work"
  return $rc
}
# Each target is one process on one core: as many at a time as there are cores, reported in order.
finish() {
  local target=${running[0]} rc=0
  wait "${pid_of[$target]}" || rc=$?
  running=("${running[@]:1}")
  if ((rc)); then
    tail -n 30 "$build/fuzz_$target.log"
    failed+=("$target")
  else
    echo "fuzz_$target: $(grep -E "stat::number_of_executed_units" "$build/fuzz_$target.log" | tail -n 1)"
  fi
}
declare -A pid_of
running=()
for corpus in "$repo"/tests/fuzz/corpus/*/; do
  target=$(basename "$corpus")
  ((${#running[@]} < $(nproc))) || finish
  echo "== fuzz_$target for $seconds s"
  fuzz_one "$target" &
  pid_of[$target]=$!
  running+=("$target")
done
while ((${#running[@]})); do finish; done
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $build/crashes/)" >&2
  exit 1
fi
echo "fuzz: every target ran $seconds s without a crash, leak or hang"
