#!/usr/bin/env bash
# Each tool links what its job needs and no more. cnet-launch prepares a framework's environment and
# execs it: it must not carry the inference engine's BLAS (a library PyTorch and friends bring their own
# of, and that a login or CPU-only node may lack). cnet-run is the one tool that computes.
#   tool_links_test.sh BIN_DIR
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
needed() { readelf -d "$bin/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
blas=$(needed cnet-launch | grep -Ei 'blas|lapack|dnnl' || true)
[[ -z $blas ]] || fail "cnet-launch links $(tr '\n' ' ' <<<"$blas")(the inference engine's libraries)"
needed cnet-run | grep -qi blas || fail "cnet-run links no BLAS: the check above would prove nothing"
echo "ok: cnet-launch links $(needed cnet-launch | wc -l) libraries, no BLAS; cnet-run links BLAS"
