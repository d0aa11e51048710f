#!/usr/bin/env bash
# Each tool links what its job needs and no more. cnet-launch prepares a framework's environment and
# execs it: it must not carry the inference engine's BLAS (a library PyTorch and friends bring their own
# of, and that a login or CPU-only node may lack). cnet-run is the one tool that computes. Graphviz draws
# cnet-topo's pictures and nothing else: the Slurm plugins, loaded into slurmd and slurmctld, never link it.
#   tool_links_test.sh BIN_DIR PLUGIN_DIR
set -euo pipefail
bin=$1 plugins=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
blas=$(needed "$bin/cnet-launch" | grep -Ei 'blas|lapack|dnnl' || true)
[[ -z $blas ]] || fail "cnet-launch links $(tr '\n' ' ' <<<"$blas")(the inference engine's libraries)"
needed "$bin/cnet-run" | grep -qi blas || fail "cnet-run links no BLAS: the check above would prove nothing"
needed "$bin/cnet-topo" | grep -q '^libgvc' || fail "cnet-topo links no Graphviz: the plugin check below would prove nothing"
for plugin in "$plugins"/*.so; do
  ! needed "$plugin" | grep -Eq '^lib(gvc|cgraph)' || fail "$(basename "$plugin") links Graphviz"
done
echo "ok: cnet-launch links $(needed "$bin/cnet-launch" | wc -l) libraries, no BLAS; cnet-run links BLAS"
