#!/usr/bin/env bash
# Each plugin exports Slurm's entry points and nothing else (its linker version script): a C++ symbol
# or a helper with C linkage leaking from a plugin can collide with Slurm's own or another plugin's.
#   plugin_exports_test.sh PLUGIN_DIR
set -euo pipefail
dir=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
check() {  # check PLUGIN ALLOWED_REGEX
  local so=$dir/$1 extra
  [[ -f $so ]] || { echo "skip: $1 not built"; return 0; }
  extra=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -Ev "^($2)\$" || true)
  [[ -z $extra ]] || fail "$1 exports more than Slurm's entry points: $(tr '\n' ' ' <<<"$extra")"
  nm -D --defined-only "$so" | awk '{print $3}' | grep -qx plugin_version || fail "$1 lacks plugin_version"
  echo "ok: $1 exports $(nm -D --defined-only "$so" | wc -l) symbols, all Slurm entry points"
}
check cnet.so 'slurm_spank_[a-z_]+|plugin_name|plugin_type|plugin_version|spank_plugin_version'
check job_submit_cnet.so 'init|fini|job_submit|job_modify|plugin_name|plugin_type|plugin_version'
check gres_rdma.so 'init|fini|gres_p_[a-z_]+|plugin_name|plugin_type|plugin_version'
