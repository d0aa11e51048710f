#!/usr/bin/env bash
# ONNX vision models through cnet-run without Slurm: torchvision's resnet18 exported by
# contrib/examples/export_onnx.py with random weights, and a folder of generated JPEG and PNG images.
# Held to PyTorch itself: the preprocessing equals torchvision's, the logits are within 1e-4 of PyTorch's;
# two stages are bit-identical to one process, predictions come in file order with their labels; bad
# models and images are refused with exit 2 before anything computes.
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { "$CNET_BIN/cnet-run" --model "$work/resnet18.onnx" "$@"; }

$py "$repo/contrib/examples/export_onnx.py" resnet18 "$work/resnet18.onnx" --seed 3 2>/dev/null
$py "$repo/contrib/examples/make_images.py" "$work/images" 10
"$CNET_BIN/cnet-run" make-input --images "$work/images" --output "$work/rows.safetensors" 2>/dev/null
$py "$here/torch_reference.py" preprocess "$work/images" "$work/rows.safetensors" || fail "preprocessing differs from torchvision's"
$py "$here/torch_reference.py" logits resnet18 3 "$work/rows.safetensors" "$work/torch.npy" 2>/dev/null

# Within 1e-4 of PyTorch (largest error over the largest logit); prints the error for the log.
close_to_torch() {
  $py - "$1" "$work/torch.npy" <<'PY'
import json, struct, sys, numpy as np
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; t = json.loads(b[8:8 + n])["output"]
mine = np.frombuffer(b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]], dtype=np.float32).reshape(t["shape"])
ref = np.load(sys.argv[2])
err = float(np.abs(mine - ref).max() / np.abs(ref).max())
print(f"largest relative error against PyTorch: {err:.2e}")
sys.exit(0 if mine.shape == ref.shape and err <= 1e-4 else 1)
PY
}
out=$(run --local 1 --input "$work/rows.safetensors" --output "$work/one.safetensors" --micro-batch 4 2>&1) || fail "one process: $out"
close_to_torch "$work/one.safetensors" || fail "one process is not within 1e-4 of PyTorch"

# From the folder to predictions in two stages, checked against one process.
seq 0 999 | sed 's/^/class /' >"$work/labels.txt"
out=$(run --local 2 --input "$work/images" --output "$work/preds.jsonl" --output-tensor "$work/two.safetensors" --labels "$work/labels.txt" \
  --micro-batch 3 --verify 2>&1) || fail "two stages: $out"
grep -q "verify: bit-identical to one process" <<<"$out" || fail "two stages not verified: $out"
grep -q "predictions: 10 images, top 5 each" <<<"$out" || fail "no predictions line: $out"
# Each rank read only its own stage's weights: together the model's (a swinging layer's twice at most),
# and the first stage few of them (ResNet's weights sit in its last blocks).
$py - "$(grep "peak memory:" <<<"$out")" "$(stat -c %s "$work/resnet18.onnx")" <<'PY' || fail "a stage read weights it does not compute with: $out"
import re, sys
weights = [int(w) for w in re.findall(r"\((\d+) MB of weights\)", sys.argv[1])]
whole = int(sys.argv[2]) / 2**20
assert len(weights) == 2 and 0.9 * whole - 2 <= sum(weights) <= whole + 3 and min(weights) <= 0.2 * whole, (weights, whole)
PY
close_to_torch "$work/two.safetensors" || fail "two stages are not within 1e-4 of PyTorch"
$py - "$work/preds.jsonl" "$work/torch.npy" <<'PY' || fail "predictions are not PyTorch's top 5 in file order"
import json, sys, numpy as np
lines = [json.loads(l) for l in open(sys.argv[1])]
ref = np.load(sys.argv[2])
assert [l["file"] for l in lines] == [f"img_{i:03d}.{'jpg' if i % 2 == 0 else 'png'}" for i in range(10)], lines
for l, r in zip(lines, ref):
    assert set(l["top_k"]) == set(np.argsort(-r)[:5].tolist()), (l, np.argsort(-r)[:5])
    assert l["labels"] == [f"class {c}" for c in l["top_k"]] and l["scores"] == sorted(l["scores"], reverse=True), l
PY
[[ ! -e $work/preds.jsonl.logits.safetensors ]] || fail "the temporary output tensor was left behind"
# Every scheme reads the folder the same way: the same tensor as the pipeline's.
for args in "--local 3 --parallel-scheme data:data" "--local 4 --parallel-scheme hybrid --num-stages 2:hybrid"; do
  set -- ${args%%:*}
  out=$(run "$@" --input "$work/images" --output "$work/${args##*:}.jsonl" --output-tensor "$work/${args##*:}.safetensors" --micro-batch 3 2>&1) ||
    fail "$args: $out"
  cmp -s "$work/two.safetensors" "$work/${args##*:}.safetensors" || fail "$args: output differs from the pipeline's"
done
echo "resnet18: PyTorch's logits within 1e-4, every scheme bit-identical, predictions in file order"

# A large folder does not sit in memory: decoded images go to a scratch file in $TMPDIR, and the rows
# sent are let go. 110 images more (66 MB of floats) raise the peak by far less than their size.
$py "$repo/contrib/examples/make_images.py" "$work/many" 160 >/dev/null
mkdir "$work/few" && cp "$work"/many/img_0[0-4]*.* "$work/few/"
peak() { run --local 1 --input "$1" --output "$work/p.jsonl" --micro-batch 8 --json 2>/dev/null | $py -c 'import json,sys; print(json.load(sys.stdin)["peak_rss_bytes"][0] >> 20)'; }
few=$(peak "$work/few") many=$(peak "$work/many")
((many - few < 25)) || fail "160 images peak at $many MB, 50 at $few MB: the decoded images are held in memory"
out=$(TMPDIR=$work/no-such-folder run --local 1 --input "$work/few" --output "$work/p.jsonl" 2>&1) && fail "a missing TMPDIR was accepted"
grep -q "in $work/no-such-folder (No such file or directory): set TMPDIR to a writable folder" <<<"$out" || fail "no reason given: $out"
echo "160 images peak at $many MB, 50 at $few MB"

# Bad images: named, and left out only when asked.
cp -r "$work/images" "$work/bad"
head -c 2000 "$work/images/img_000.jpg" >"$work/bad/img_000.jpg"
echo "not a picture" >"$work/bad/notes.png"
out=$(run --local 2 --input "$work/bad" --output "$work/bad.jsonl" 2>&1) && fail "a truncated image was accepted: $out"
grep -q "img_000.jpg: damaged or truncated JPEG.*pass --skip-bad-inputs" <<<"$out" || fail "the truncated image is not named: $out"
out=$(run --local 2 --input "$work/bad" --output "$work/bad.jsonl" --skip-bad-inputs --verify 2>&1) || fail "--skip-bad-inputs: $out"
grep -q "left out (--skip-bad-inputs): .*notes.png: not a JPEG or PNG image" <<<"$out" || fail "the file that is no image is not listed: $out"
[[ $(wc -l <"$work/bad.jsonl") == 9 ]] || fail "--skip-bad-inputs: $(wc -l <"$work/bad.jsonl") predictions for 9 good images"
grep -q "verify: bit-identical" <<<"$out" || fail "--skip-bad-inputs not verified: $out"
mkdir "$work/empty"
out=$(run --local 1 --input "$work/empty" --output "$work/e.jsonl" 2>&1; echo "exit $?")
grep -q "no images in the folder" <<<"$out" && grep -q "exit 2" <<<"$out" || fail "an empty folder: $out"
out=$(run --local 1 --input "$work/images" --output "$work/c.jsonl" --crop 192 2>&1; echo "exit $?")
grep -q "the model takes 224x224 images, but --crop is 192: give --crop 224" <<<"$out" && grep -q "exit 2" <<<"$out" || fail "a wrong crop: $out"

# Bad models: a truncated file, an operator cnet does not run.
head -c 100000 "$work/resnet18.onnx" >"$work/cut.onnx"
out=$("$CNET_BIN/cnet-run" --local 1 --model "$work/cut.onnx" --input "$work/images" --output "$work/x.jsonl" 2>&1; echo "exit $?")
grep -q "cut.onnx: is not a complete ONNX model (truncated or damaged)" <<<"$out" && grep -q "exit 2" <<<"$out" || fail "a truncated model: $out"
$py - "$work/odd.onnx" <<'PY' 2>/dev/null
import sys, torch
m = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 4), torch.nn.Hardswish()).eval()
torch.onnx.export(m, torch.zeros(1, 3, 2, 2), sys.argv[1], opset_version=17, input_names=["input"], dynamic_axes={"input": {0: "batch"}})
PY
out=$("$CNET_BIN/cnet-run" --local 1 --model "$work/odd.onnx" --input "$work/rows.safetensors" --output "$work/x.safetensors" 2>&1; echo "exit $?")
grep -q "uses operators cnet does not run: HardSwish (first at node '.*' (HardSwish)); supported: .*Conv" <<<"$out" && grep -q "exit 2" <<<"$out" ||
  fail "an unsupported operator: $out"
echo "bad images and models are refused with exit 2, naming the file and the fix"
