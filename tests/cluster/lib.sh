#!/usr/bin/env bash
# (sourced by the cluster tests, not run on its own)
# Helpers for cluster tests: run commands on the fixture minicluster and assert on their output.
set -euo pipefail
: "${CNET_MINICLUSTER:?run through ctest}" "${CNET_BIN:?run through ctest}"
# A Slurm under its own prefix (the cluster-MAJOR.MINOR label): its commands, not the system's.
[[ -z ${CNET_SLURM_PREFIX:-} ]] || export PATH=$CNET_SLURM_PREFIX/bin:$CNET_SLURM_PREFIX/sbin:$PATH
# The release the tests run against ("22.05", "24.11"), and how it spells a gres in a job's TresPerNode:
# "gres:gpu:1" before 23.02, "gres/gpu:1" since.
slurm_release=$(slurmd -V | awk '{ split($2, v, "."); print v[1] "." v[2] }')
at_least_release() { [[ $(printf '%s\n%s\n' "$1" "$slurm_release" | sort -V | head -n1) == "$1" ]]; }
tres_gres=gres:
at_least_release 23.02 && tres_gres=gres/

fail() { echo "FAIL: $*" >&2; exit 1; }
on_cluster() { "$CNET_MINICLUSTER" run -- timeout 120 "$@"; }
expect_eq() { [[ $1 == "$2" ]] || fail "$3: expected '$2', got '$1'"; }
