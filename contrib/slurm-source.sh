#!/usr/bin/env bash
# Fetches a Slurm source tree, configures it once and prints its path, for -DCNET_SLURM_SOURCE=...
# (select_plugin/ needs Slurm's internal headers and config.h). The tree is cached under the build
# folder and never committed.
#   contrib/slurm-source.sh [--version MAJOR.MINOR] [--prefix DIR] [CACHE_DIR]
# Without --version (or with the installed one): the source of the installed slurm-wlm, configured for
# Debian's paths. Another release comes from the Debian suite that ships it (the table below), as its
# upstream orig tarball, configured to install under --prefix (default /opt/slurm-MAJOR.MINOR) for
# contrib/slurm-build.sh. Progress goes to stderr; stdout is only the path. Exit 1 with the reason.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "slurm-source: $*" >&2; exit 1; }

# Releases cnet is built and tested against that Debian does not install here: MAJOR.MINOR, the Debian
# suite whose slurm-wlm is that release. A new release is one more line (and a CI run with it).
declare -A suite_of=([24.11]=trixie)

want="" prefix="" cache=""
while (($#)); do
  case $1 in
    --version) want=${2:?--version needs MAJOR.MINOR, e.g. 24.11}; shift 2 ;;
    --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) cache=$1; shift ;;
  esac
done
cache=${cache:-$repo/build/slurm-source}

installed=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins 2>/dev/null || dpkg-query -W -f='${Version}' slurmd 2>/dev/null) ||
  installed=""

# deb-src entries for the configured suites (and, for another release, its suite) so apt-get source works.
ensure_deb_src() {  # ensure_deb_src [EXTRA_SUITE]
  local src_list=/etc/apt/sources.list.d/cnet-deb-src.sources extra=${1:-} changed=0 f
  if [[ ! -f $src_list ]]; then
    echo "slurm-source: adding deb-src entries for the configured suites" >&2
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f && $f != "$src_list" && $f != */cnet-slurm-*-src.sources ]] || continue
      sed -n '/^Types:.*deb/,/^$/p' "$f" | sed 's/^Types:.*/Types: deb-src/'
      echo
    done >"$src_list"
    if [[ -f /etc/apt/sources.list ]]; then
      grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >/etc/apt/sources.list.d/cnet-deb-src.list || true
    fi
    changed=1
  fi
  if [[ -n $extra && ! -f /etc/apt/sources.list.d/cnet-slurm-$extra-src.sources ]]; then
    echo "slurm-source: adding a deb-src entry for $extra (sources only: nothing is installed from it)" >&2
    local uri
    uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "${uri:-http://deb.debian.org/debian}" "$extra" >"/etc/apt/sources.list.d/cnet-slurm-$extra-src.sources"
    changed=1
  fi
  if ((changed)); then apt-get update -q >&2 || die "apt-get update failed"; fi
}

if [[ -z $want || ( -n $installed && ${installed%.*} == "$want"* ) ]]; then
  [[ -n $installed ]] || die "slurm-wlm is not installed: run contrib/install-deps.sh first"
  [[ -z $prefix ]] || die "--prefix is for releases built from source; the installed $installed lives where Debian put it"
  upstream=${installed%%-*}
  tree=$cache/slurm-wlm-$upstream
  if [[ -f $tree/config.h && -f $tree/.cnet-configured ]] && grep -qx "$installed" "$tree/.cnet-configured"; then
    echo "$tree"
    exit 0
  fi
  apt-get source --print-uris "slurm-wlm=$installed" >/dev/null 2>&1 || ensure_deb_src
  mkdir -p "$cache"
  rm -rf "$tree"
  echo "slurm-source: fetching slurm-wlm $installed" >&2
  (cd "$cache" && apt-get source -q "slurm-wlm=$installed" >&2) || die "apt-get source slurm-wlm=$installed failed"
  [[ -d $tree ]] || die "apt-get source did not unpack into $tree"
  echo "slurm-source: configuring (about 15 s)" >&2
  (cd "$tree" && ./configure --prefix=/usr --sysconfdir=/etc/slurm --libdir=/usr/lib/x86_64-linux-gnu \
     --enable-pam=no --disable-debug >"$cache/configure.log" 2>&1) ||
    { tail -n 20 "$cache/configure.log" >&2; die "configure failed (log: $cache/configure.log)"; }
  echo "$installed" >"$tree/.cnet-configured"
  echo "$tree"
  exit 0
fi

suite=${suite_of[$want]:-}
[[ -n $suite ]] || die "no source known for Slurm $want (known: ${!suite_of[*]}${installed:+, and the installed ${installed%%-*}}); for your own release configure its source yourself and pass -DCNET_SLURM_SOURCE and -DCNET_SLURM_PREFIX (README, admin guide)"
prefix=${prefix:-/opt/slurm-$want}
pmix_prefix=$(pkg-config --variable=prefix pmix 2>/dev/null || echo /usr)
[[ -d /usr/lib/x86_64-linux-gnu/pmix2 ]] && pmix_prefix=/usr/lib/x86_64-linux-gnu/pmix2
# Debian's own configure flags for slurm-wlm, with this prefix: multiple slurmd per host is what the
# minicluster runs (and lets the nodes' shared munged decode one job credential on every node).
configure_args=(--prefix="$prefix" --sysconfdir="$prefix/etc" --with-pmix="$pmix_prefix" --with-munge=/usr --with-hwloc=/usr
                --enable-pam=no --disable-debug --without-rpath --enable-multiple-slurmd)
# A tree of this release already configured the same way is used as it is: no apt, no network.
for tree in "$cache"/slurm-"$want".*/; do
  tree=${tree%/}
  [[ -f $tree/config.h && -f $tree/.cnet-configured ]] || continue
  if grep -qxF "${tree##*/slurm-} ${configure_args[*]}" "$tree/.cnet-configured"; then
    echo "$tree"
    exit 0
  fi
done
ensure_deb_src "$suite"
uris=$(apt-get source --print-uris "slurm-wlm/$suite" 2>/dev/null | grep "orig.tar" || true)
if [[ -z $uris ]]; then
  apt-get update -q >&2 || true
  uris=$(apt-get source --print-uris "slurm-wlm/$suite" 2>/dev/null | grep "orig.tar" || true)
fi
[[ -n $uris ]] || die "the $suite suite has no slurm-wlm source on this mirror (apt-get source --print-uris slurm-wlm/$suite)"
read -r uri file _size hash <<<"$uris"
uri=${uri//\'/}
upstream=$(sed -E 's/^slurm-wlm_([0-9.]+)\.orig\.tar\..*/\1/' <<<"$file")
[[ $upstream == "$want".* ]] || die "the $suite suite has Slurm $upstream, not $want"
tree=$cache/slurm-$upstream
stamp="$upstream ${configure_args[*]}"
if [[ -f $tree/config.h && -f $tree/.cnet-configured ]] && grep -qxF "$stamp" "$tree/.cnet-configured"; then
  echo "$tree"
  exit 0
fi
mkdir -p "$cache"
if ! { [[ -f $cache/$file ]] && sha256sum "$cache/$file" | grep -q "^${hash#SHA256:} "; }; then
  echo "slurm-source: fetching $file ($(( ${_size:-0} / 1048576 )) MiB) from $suite" >&2
  curl -fsSL --retry 3 -o "$cache/$file.part" "$uri" || die "download of $uri failed"
  sha256sum "$cache/$file.part" | grep -q "^${hash#SHA256:} " || die "$file does not match the checksum $suite publishes"
  mv "$cache/$file.part" "$cache/$file"
fi
rm -rf "$tree"
mkdir -p "$tree"
tar -xzf "$cache/$file" -C "$tree" --strip-components=1 || die "cannot unpack $cache/$file"
echo "slurm-source: configuring Slurm $upstream for $prefix (about 30 s)" >&2
(cd "$tree" && ./configure "${configure_args[@]}" >"$cache/configure-$upstream.log" 2>&1) ||
  { tail -n 20 "$cache/configure-$upstream.log" >&2; die "configure failed (log: $cache/configure-$upstream.log)"; }
echo "$stamp" >"$tree/.cnet-configured"
echo "$tree"
