#!/usr/bin/env bash
# Every tool and plugin a build installs carries Debian's hardening (hardening-check from devscripts:
# PIE, stack protector, fortify, relro, bind now): root daemons load the plugins, root runs the tools.
# A build without CNET_HARDENING (Debug, sanitizers) has nothing to check.
#   hardening_test.sh BUILD_DIR
set -euo pipefail
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^CNET_HARDENING:BOOL=ON' "$build/CMakeCache.txt" || { echo "skip: built without CNET_HARDENING"; exit 0; }
grep -q '^CMAKE_BUILD_TYPE:STRING=Debug' "$build/CMakeCache.txt" && { echo "skip: a Debug build (fortify needs optimisation)"; exit 0; }
command -v hardening-check >/dev/null || fail "hardening-check is missing: apt-get install devscripts (contrib/install-deps.sh does)"
checked=0
for f in "$build"/bin/cnet-* "$build"/plugins/*.so; do
  [[ -f $f ]] || continue
  # A file that calls no fortifiable function has nothing to fortify: hardening-check says "unknown",
  # which --nofortify lets pass only for that case; libraries are not executables (--nopie). Control-flow
  # marks are ANDed over every object linked in, and Debian 12's own start-up objects carry none, so no
  # binary built on it can show them (--nocfprotection); cnet's code is compiled with them all the same.
  out=$(hardening-check --nofortify --nocfprotection $([[ $f == *.so ]] && echo --nopie) "$f" 2>&1) || fail "$(basename "$f") is not hardened: $out"
  grep -q 'Fortify Source functions: yes\|Fortify Source functions: unknown' <<<"$out" || fail "$(basename "$f") is not fortified: $out"
  checked=$((checked + 1))
done
((checked >= 8)) || fail "only $checked files checked in $build"
echo "ok: $checked tools and plugins pass hardening-check"
