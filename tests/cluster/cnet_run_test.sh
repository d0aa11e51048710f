#!/usr/bin/env bash
# cnet-run through srun on the minicluster: a 2-stage pipeline under a template, verified bit for bit
# against one process; an ONNX vision model from a folder of images to predictions; data parallel over 4 ranks; a stage killed mid-run ends the job within 10 s
# naming the stage and node, and --resume finishes it to the same bytes as an undisturbed run; a stage
# that hangs is caught by the transport's timeout.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cnet_run_lib.sh"
work=$CNET_BUILD_DIR/test-work/cnet-run
rm -rf "$work" && mkdir -p "$work"
cd "$work"
make_example "$work" 8 256 1024
run() { on_cluster srun --mpi=pmix --cnet-bind=none "$@"; }
args=(--model model.safetensors --input input.safetensors --micro-batch 8)

out=$(run -N2 --ntasks-per-node=1 --gres=gpu:1 --cnet-template=infer-small "$CNET_BIN/cnet-run" --name demo "${args[@]}" \
        --output pipe.safetensors --num-stages 2 --verify --trace pipe.trace.json 2>&1) || fail "pipeline job: $out"
echo "$out"
grep -q "stage 0: layers 0-.* on cn1" <<<"$out" || fail "stage 0 not on cn1"
grep -q "stage 1: layers .* on cn2" <<<"$out" || fail "stage 1 not on cn2"
grep -q "verify: bit-identical to one process" <<<"$out" || fail "pipeline output not verified"
grep -Eq "computing: stage 0 [0-9]+%, stage 1 [0-9]+% of the run" <<<"$out" || fail "no busy line"
# The trace, gathered over PMIx from both nodes: each stage's rank named with its node, 128 spans each.
/usr/bin/python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = sorted(e["args"]["name"] for e in events if e["name"] == "process_name")
assert names == ["stage 0/2 (rank 0 on cn1)", "stage 1/2 (rank 1 on cn2)"], names
assert [sum(e["ph"] == "X" and e["pid"] == r for e in events) for r in (0, 1)] == [128, 128], "not one span per micro-batch"
' pipe.trace.json || fail "the srun job's trace"

out=$(run -N2 -n4 "$CNET_BIN/cnet-run" --name demo "${args[@]}" --output data.safetensors --parallel-scheme data 2>&1) || fail "data job: $out"
cmp -s pipe.safetensors data.safetensors || fail "data-parallel output differs from the pipeline's"

# The source article's demo in small: a vision model (resnet18, ONNX, random weights), a folder of images,
# two stages on two nodes, predictions verified against one process.
/usr/bin/python3 "$(dirname "$0")/../../contrib/examples/export_onnx.py" resnet18 resnet18.onnx 2>/dev/null || fail "export resnet18"
/usr/bin/python3 "$(dirname "$0")/../../contrib/examples/make_images.py" images 8
out=$(run -N2 --ntasks-per-node=1 --cnet-template=infer-small "$CNET_BIN/cnet-run" --name vision --model resnet18.onnx --input images \
        --output preds.jsonl --num-stages 2 --micro-batch 2 --verify 2>&1) || fail "ONNX pipeline job: $out"
echo "$out"
grep -q "stage 1: layers .* on cn2" <<<"$out" || fail "the vision model's stage 1 is not on cn2"
grep -q "verify: bit-identical to one process" <<<"$out" || fail "the vision model's pipeline is not verified"
[[ $(grep -c '"file":"img_00[0-7]' preds.jsonl) == 8 ]] || fail "not one prediction per image: $(cat preds.jsonl)"

# Kill stage 1 (on cn2) mid-run.
make_example "$work" 10 384 8192  # long enough (several s) that the kill lands mid-run
run -N2 --ntasks-per-node=1 "$CNET_BIN/cnet-run" --name ref "${args[@]}" --output ref.safetensors 2>/dev/null || fail "reference run"
run -N2 --ntasks-per-node=1 "$CNET_BIN/cnet-run" --name ref "${args[@]}" --output out.safetensors >killed.log 2>&1 &
kill_rank_mid_run killed.log $! "cnet-run --name ref" SLURM_PROCID 1
cat killed.log
grep -q "stage 1/2 (rank 1 on cn2) failed" killed.log || fail "the dead stage and its node are not named"
out=$(run -N2 --ntasks-per-node=1 "$CNET_BIN/cnet-run" --name ref "${args[@]}" --output out.safetensors --resume --verify 2>&1) ||
  fail "resume: $out"
grep -q "resuming: [0-9]* of 1024 micro-batches already done" <<<"$out" || fail "resume redid everything: $out"
cmp -s ref.safetensors out.safetensors || fail "resumed output differs from an undisturbed run"

# Stage 1 hangs (stopped, not dead): the transport's timeout ends the job naming the silent stage's node.
run -N2 --ntasks-per-node=1 "$CNET_BIN/cnet-run" --name hung "${args[@]}" --output hung.safetensors --timeout 3 >hung.log 2>&1 &
stop_rank_mid_run hung.log $! "cnet-run --name hung" SLURM_PROCID 1
cat hung.log
grep -q "on cn2 did not complete within 3000 ms (peer stalled or hung)" hung.log || fail "the hung stage's node is not named"
echo ok
