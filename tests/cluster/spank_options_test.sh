#!/usr/bin/env bash
# The cnet SPANK plugin's options in the client: listing, unknown names, hostile values. Nothing may
# reach a shell, a path or a crash; the daemons must all still be up afterwards.
source "$(dirname "$0")/lib.sh"

out=$(on_cluster srun --cnet-template=list true)
echo "$out"
for t in infer-small infer-pipeline train-8gpu debug; do grep -q "^  $t: " <<<"$out" || fail "list lacks $t"; done
grep -q 'train-8gpu: .*gres=gpu:8 .*switches=1 exclusive' <<<"$out" || fail "list does not show what train-8gpu expands to"

# Whole outputs into grep: `cmd | grep -q` can fail under pipefail when grep stops reading first.
grep -q -- '--cnet-template=NAME' <<<"$(on_cluster srun --help)" || fail "srun --help does not show --cnet-template"
grep -q -- '--cnet-bind=MODE' <<<"$(on_cluster sbatch --help)" || fail "sbatch --help does not show --cnet-bind"

expect_rejected() {  # expect_rejected "what the error must say" srun|sbatch args...
  local want=$1 err
  shift
  if err=$(on_cluster "$@" 2>&1); then fail "accepted: $*"; fi
  [[ $err == *"$want"* ]] || fail "error for '$*' does not say '$want': $err"
}
expect_rejected "valid templates: infer-small, infer-pipeline, train-8gpu, debug" srun --cnet-template=nope true
expect_rejected "unknown template 'bad'" sbatch --cnet-template=bad --wrap=true
expect_rejected "--cnet-bind must be none, closest or strict" srun --cnet-bind=loose true
expect_rejected "--cnet-net must be auto, rdma or tcp" srun '--cnet-net=$(id)' true

pwned=/tmp/cnet-pwned-$$
for hostile in '../../etc/passwd' "\$(touch $pwned)" "\`touch $pwned\`" "a;touch $pwned" "$(printf 'x%.0s' {1..10240})" $'line\nbreak'; do
  expect_rejected "--cnet-template needs a template name" srun "--cnet-template=$hostile" true
done
[[ ! -e $pwned ]] || fail "a hostile option value ran a command"
"$CNET_MINICLUSTER" status >/dev/null || fail "a daemon died during the hostile-input tests"
echo "all hostile values rejected, cluster intact"
