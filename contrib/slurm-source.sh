#!/usr/bin/env bash
# Fetches the Slurm source that matches the installed slurm-wlm (apt-get source), configures it once and
# prints the path of the configured tree, for -DCNET_SLURM_SOURCE=... (select_plugin/ needs Slurm's
# internal headers and config.h). The tree is cached under the build folder and never committed.
#   contrib/slurm-source.sh [CACHE_DIR]      (default <repo>/build/slurm-source)
# Progress goes to stderr; stdout is only the path. Exit 1 with the reason on failure.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${1:-$repo/build/slurm-source}
die() { echo "slurm-source: $*" >&2; exit 1; }

version=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins 2>/dev/null || dpkg-query -W -f='${Version}' slurmd 2>/dev/null) ||
  die "slurm-wlm is not installed: run contrib/install-deps.sh first"
upstream=${version%%-*}
tree=$cache/slurm-wlm-$upstream
if [[ -f $tree/config.h && -f $tree/.cnet-configured ]] && grep -qx "$version" "$tree/.cnet-configured"; then
  echo "$tree"
  exit 0
fi

# apt-get source needs a deb-src entry for the same suite as the installed package.
if ! apt-get source --print-uris "slurm-wlm=$version" >/dev/null 2>&1; then
  echo "slurm-source: adding deb-src entries for the configured suites" >&2
  src_list=/etc/apt/sources.list.d/cnet-deb-src.sources
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f && $f != "$src_list" ]] || continue
    sed -n '/^Types:.*deb/,/^$/p' "$f" | sed 's/^Types:.*/Types: deb-src/'
    echo
  done >"$src_list"
  if [[ -f /etc/apt/sources.list ]]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >/etc/apt/sources.list.d/cnet-deb-src.list || true
  fi
  apt-get update -q >&2 || die "apt-get update failed"
fi

mkdir -p "$cache"
rm -rf "$tree"
echo "slurm-source: fetching slurm-wlm $version" >&2
(cd "$cache" && apt-get source -q "slurm-wlm=$version" >&2) || die "apt-get source slurm-wlm=$version failed"
[[ -d $tree ]] || die "apt-get source did not unpack into $tree"
echo "slurm-source: configuring (about 15 s)" >&2
(cd "$tree" && ./configure --prefix=/usr --sysconfdir=/etc/slurm --libdir=/usr/lib/x86_64-linux-gnu \
   --enable-pam=no --disable-debug >"$cache/configure.log" 2>&1) ||
  { tail -n 20 "$cache/configure.log" >&2; die "configure failed (log: $cache/configure.log)"; }
echo "$version" >"$tree/.cnet-configured"
echo "$tree"
