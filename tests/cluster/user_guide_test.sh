#!/usr/bin/env bash
# The user guide's three batch scripts, as written there, on a minicluster that sees this machine's
# real topology (as the demo's does): pipeline inference under a template, PyTorch DDP through
# cnet-launch, and a link check that passes and then, against a baseline no link here can reach,
# refuses to start the job.
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
examples=$repo/contrib/examples
work=$(mktemp -d /var/tmp/cnet-guide-XXXXXX)  # not /tmp: each node has its own
export CNET_MINICLUSTER_DIR=$work/state
unset CNET_SPANK_ARGS
trap '"$CNET_MINICLUSTER" down >/dev/null 2>&1; rm -rf "$work"' EXIT

for f in pipeline-inference.sbatch pytorch-ddp.sbatch link-check.sbatch; do
  python3 - "$repo/doc/user-guide.md" "$examples/$f" <<'PY' || fail "doc/user-guide.md does not show contrib/examples/$f as it is"
import sys
guide, script = open(sys.argv[1]).read(), open(sys.argv[2]).read()
sys.exit(0 if script in guide else 1)
PY
done

"$CNET_MINICLUSTER" up 2 >"$work/up.log" 2>&1 || fail "cluster: $(tail "$work/up.log")"
eval "$("$CNET_MINICLUSTER" env)"
export PATH=$CNET_BIN${CNET_SLURM_PREFIX:+:$CNET_SLURM_PREFIX/bin}:/usr/bin:$PATH  # cnet as the package installs it; the cluster's Slurm; python3 with Debian's torch
cp "$examples"/*.sbatch "$examples"/ddp_train.py "$work/"
cd "$work"
submit() { timeout 240 sbatch --parsable --wait "$@"; }

job=$(submit pipeline-inference.sbatch) || fail "pipeline-inference.sbatch: $(cat cnet-pipeline-*.out)"
out=$(cat "cnet-pipeline-$job.out")
echo "$out"
grep -q "stage 0: layers .* on cn1" <<<"$out" && grep -q "stage 1: layers .* on cn2" <<<"$out" || fail "not one stage per node"
grep -q "done: 4096 rows" <<<"$out" || fail "not every row was done"
scontrol show job "$job" | grep -q "TimeLimit=01:00:00" || fail "the infer-small template was not applied"
"$CNET_BIN/cnet-run" --local 1 --model example-model.safetensors --input example-input.safetensors --output one.safetensors \
  --micro-batch 16 >/dev/null 2>&1 || fail "single-process run"
cmp -s one.safetensors example-output.safetensors || {
  python3 - <<'PY' || fail "the pipeline's rows differ from one process's"
import struct
def rows(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; return b[8 + n:]
raise SystemExit(rows("one.safetensors") != rows("example-output.safetensors"))
PY
}

job=$(submit pytorch-ddp.sbatch) || fail "pytorch-ddp.sbatch: $(cat cnet-ddp-*.out)"
out=$(cat "cnet-ddp-$job.out")
echo "$out"
grep -q "^ddp: 4 ranks on cn\[1-2\], 50 steps, loss .* weights identical on every rank" <<<"$out" || fail "DDP did not train in sync"

job=$(submit link-check.sbatch) || fail "link-check.sbatch: $(cat cnet-link-check-*.out)"
out=$(cat "cnet-link-check-$job.out")
echo "$out"
grep -q "link check: passed" <<<"$out" && grep -q "^ddp: 2 ranks" <<<"$out" || fail "the job after a passing link check did not run"
[[ -f link-baseline.json ]] || fail "the first link check saved no baseline"
# A baseline ten times faster than anything here: the check must refuse and the job must not start.
python3 - <<'PY'
import json
b = json.load(open("link-baseline.json"))
for report in b["reports"]:
    for r in report["results"]:
        r["bandwidth_gbytes"] *= 10
json.dump(b, open("link-baseline.json", "w"))
PY
if job=$(submit link-check.sbatch); then fail "the link check passed against an unreachable baseline"; fi
out=$(cat cnet-link-check-*.out | tail -n 30)
grep -q "cnet-perf: regressed: " <<<"$out" && grep -q "link check: slower than link-baseline.json; not starting the job" <<<"$out" ||
  fail "no reason given: $out"
echo ok
