#!/usr/bin/env bash
# Builds and installs a Slurm release from source into its own prefix, for cnet's build and minicluster
# (-DCNET_SLURM_PREFIX, contrib/minicluster --slurm-prefix). Kept there and only rebuilt when missing.
#   contrib/slurm-build.sh --version MAJOR.MINOR [--prefix DIR] [--source-cache DIR]
# Prints the prefix on stdout; progress (a line a minute while make runs) on stderr.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "slurm-build: $*" >&2; exit 1; }
want="" prefix="" cache=""
while (($#)); do
  case $1 in
    --version) want=${2:?--version needs MAJOR.MINOR}; shift 2 ;;
    --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
    --source-cache) cache=${2:?--source-cache needs a folder}; shift 2 ;;
    -h | --help) sed -n '2,6p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n $want ]] || die "--version MAJOR.MINOR is required, e.g. --version 24.11"
prefix=${prefix:-/opt/slurm-$want}

# The configured tree knows how it was configured; an install from the same configuration is reused.
tree=$("$repo/contrib/slurm-source.sh" --version "$want" --prefix "$prefix" ${cache:+"$cache"})
if [[ -x $prefix/sbin/slurmctld && -f $prefix/.cnet-built ]] && cmp -s "$prefix/.cnet-built" "$tree/.cnet-configured"; then
  echo "$prefix"
  exit 0
fi
log=$(dirname "$tree")/make-$(basename "$tree").log
echo "slurm-build: building $(basename "$tree") with $(nproc) jobs (about 7 minutes on 2 cores; log: $log)" >&2
start=$SECONDS
(cd "$tree" && make -j"$(nproc)" >"$log" 2>&1) &
make_pid=$!
while kill -0 "$make_pid" 2>/dev/null; do
  sleep 60 &
  wait $! || true
  kill -0 "$make_pid" 2>/dev/null && echo "slurm-build: still compiling, $(( (SECONDS - start) / 60 )) min" >&2
done
wait "$make_pid" || { tail -n 30 "$log" >&2; die "make failed (log: $log)"; }
echo "slurm-build: installing into $prefix" >&2
(cd "$tree" && make install >>"$log" 2>&1) || { tail -n 30 "$log" >&2; die "make install failed (log: $log)"; }
mkdir -p "$prefix/etc"
cp "$tree/.cnet-configured" "$prefix/.cnet-built"
echo "slurm-build: $(basename "$tree") in $prefix after $(( (SECONDS - start) / 60 )) min" >&2
echo "$prefix"
