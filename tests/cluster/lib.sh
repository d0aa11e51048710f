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

# What a stuck job leaves to read: its record, and the tail of every daemon's log (a sanitizer report
# that aborted slurmstepd shows there, or in the asan folder run-tests.sh names).
show_job_and_logs() {
  on_cluster scontrol show job "$1" >&2 || true
  local f
  for f in "${CNET_MINICLUSTER_DIR:?}"/log/slurmctld.log "$CNET_MINICLUSTER_DIR"/log/slurmd.*; do
    [[ -s $f ]] || continue
    echo "--- tail of $f" >&2
    tail -n 25 "$f" >&2
  done
}
# wait_job JOB SECONDS: until JOB has left the queue; past SECONDS it is shown, cancelled, and the test fails.
wait_job() {
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    [[ -z $(on_cluster squeue -h -j "$1" -o %t 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  show_job_and_logs "$1"
  on_cluster scancel "$1" >/dev/null 2>&1 || true
  fail "job $1 still in the queue after $2 s"
}
