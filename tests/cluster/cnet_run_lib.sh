#!/usr/bin/env bash
# (sourced by the cluster tests, not run on its own)
# Shared by the cnet-run tests: example files, the pid of one rank, and reading outputs.
make_example() {  # make_example DIR LAYERS HIDDEN ROWS
  "$CNET_BIN/cnet-run" make-model --output "$1/model.safetensors" --layers "$2" --hidden "$3" 2>/dev/null
  "$CNET_BIN/cnet-run" make-input --output "$1/input.safetensors" --rows "$4" --model "$1/model.safetensors" 2>/dev/null
}
# The pid of the process whose environment has VAR=VALUE and whose command line matches PATTERN.
pid_with_env() {  # pid_with_env PATTERN VAR VALUE
  local p
  local environ
  for p in $(pgrep -f "$1"); do
    # Read whole, then grep: `tr | grep -q` fails under pipefail when grep stops reading first (SIGPIPE).
    environ=$({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null) || continue
    grep -qx "$2=$3" <<<"$environ" && { echo "$p"; return 0; }
  done
  return 0  # none: the caller says so (a failing $(...) would end a set -e test without a word)
}
wait_for_line() {  # wait_for_line FILE PATTERN SECONDS
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# Kills one rank of a running job once LOG shows progress, then waits for the job; fails unless the job
# exits non-zero within 10 s of the kill.
kill_rank_mid_run() {  # kill_rank_mid_run LOG JOB_PID PATTERN VAR VALUE
  local log=$1 job=$2 victim start rc=0
  wait_for_line "$log" "micro-batches, " 60 || fail "no progress line: $(cat "$log")"
  victim=$(pid_with_env "$3" "$4" "$5")
  [[ -n $victim ]] || fail "the rank with $4=$5 was not found"
  kill -9 "$victim"
  start=$SECONDS
  wait "$job" || rc=$?
  ((rc != 0)) || fail "the job exited 0 after a rank was killed"
  ((SECONDS - start < 10)) || fail "the job took $((SECONDS - start)) s to stop"
}
# Stops (SIGSTOP, not kills) one rank once LOG shows progress, then waits for the job; fails unless the
# job exits non-zero within 10 s of the stop (the transport's timeout must notice a hung peer).
stop_rank_mid_run() {  # stop_rank_mid_run LOG JOB_PID PATTERN VAR VALUE
  local log=$1 job=$2 stalled start rc=0
  wait_for_line "$log" "micro-batches, " 60 || fail "no progress line: $(cat "$log")"
  stalled=$(pid_with_env "$3" "$4" "$5")
  [[ -n $stalled ]] || fail "the rank with $4=$5 was not found"
  kill -STOP "$stalled"
  start=$SECONDS
  wait "$job" || rc=$?
  kill -CONT "$stalled" 2>/dev/null || true
  ((rc != 0)) || fail "a hung stage went unnoticed"
  ((SECONDS - start < 10)) || fail "a hung stage took $((SECONDS - start)) s to notice"
}
