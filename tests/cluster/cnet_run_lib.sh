# Shared by the cnet-run tests: example files, the pid of one rank, and reading outputs.
make_example() {  # make_example DIR LAYERS HIDDEN ROWS
  "$CNET_BIN/cnet-run" make-model --output "$1/model.safetensors" --layers "$2" --hidden "$3" 2>/dev/null
  "$CNET_BIN/cnet-run" make-input --output "$1/input.safetensors" --rows "$4" --model "$1/model.safetensors" 2>/dev/null
}
# The pid of the process whose environment has VAR=VALUE and whose command line matches PATTERN.
pid_with_env() {  # pid_with_env PATTERN VAR VALUE
  local p
  for p in $(pgrep -f "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "$2=$3" && { echo "$p"; return; }
  done
}
wait_for_line() {  # wait_for_line FILE PATTERN SECONDS
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
