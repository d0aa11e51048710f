#!/usr/bin/env bash
# cnet-run without Slurm (--local N): every scheme verified bit for bit against one process and against
# each other, a killed stage ending the job fast and naming the stage, --resume finishing it exactly, and
# bad files and flags refused with exit 2 before anything runs.
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
source "$(dirname "$0")/cnet_run_lib.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { "$CNET_BIN/cnet-run" --name t --model "$work/model.safetensors" --input "$work/input.safetensors" "$@"; }

make_example "$work" 6 128 300  # 300 rows: the last micro-batch of 16 is short
for args in "--local 2:pipe" "--local 3 --parallel-scheme data:data" "--local 4 --parallel-scheme hybrid --num-stages 2:hybrid" "--local 1:one" \
  "--local 3:three" "--local 2 --fixed-split:fixed"; do
  set -- ${args%%:*}
  out=$(run "$@" --output "$work/${args##*:}.safetensors" --micro-batch 16 --verify 2>&1) || fail "$args: $out"
  grep -q "verify: bit-identical to one process" <<<"$out" || fail "$args not verified: $out"
done
for s in data hybrid one three fixed; do cmp -s "$work/pipe.safetensors" "$work/$s.safetensors" || fail "$s output differs from the pipeline's"; done
echo "pipeline, data, hybrid and one rank give identical files"
# Without --name every line says plainly "cnet-run:", with it "cnet-run NAME:".
out=$("$CNET_BIN/cnet-run" --model "$work/model.safetensors" --input "$work/input.safetensors" --local 2 --output "$work/unnamed.safetensors" 2>&1) ||
  fail "a run without --name: $out"
grep -q "cnet-run cnet-run" <<<"$out" && fail "the default name doubles the tool's: $out"
grep -q "^cnet-run: done: " <<<"$out" || fail "no 'cnet-run: done:' line without --name: $out"
grep -q "^cnet-run t: done: " <<<"$(run --local 2 --output "$work/named.safetensors" 2>&1)" || fail "no 'cnet-run t: done:' line with --name t"
# The layers beside each cut between CPU stages go to whichever stage keeps the two even: with 2 blocks
# against 4 blocks, norm and head, stage 0 takes stage 1's first layer (usually for most micro-batches);
# with 5 blocks against 1 and the rest, stage 0 gives stage 1 its last layer. Either way the output is
# bit for bit one process's.
mkdir "$work/swing"
make_example "$work/swing" 6 256 1536  # 48 micro-batches of 32 rows, a few ms each: long enough to time
cut_moves() { /usr/bin/python3 -c 'import json,sys; c=json.loads(sys.stdin.read())["cut_moves"][0]; print(c["took"], c["gave"])'; }
for split in 2,6:took 5,3:gave; do
  out=$("$CNET_BIN/cnet-run" --name t --model "$work/swing/model.safetensors" --input "$work/swing/input.safetensors" --local 2 \
    --stage-layers ${split%%:*} --output "$work/swing/out.safetensors" --micro-batch 32 --json --verify 2>"$work/swing.log") ||
    fail "--stage-layers ${split%%:*}: $(cat "$work/swing.log")"
  grep -q "verify: bit-identical" "$work/swing.log" || fail "swinging cut not verified: $(cat "$work/swing.log")"
  grep -Eq "^  layers [0-9]+-[0-9]+: on stage 0 or 1, whichever keeps the two even" "$work/swing.log" || fail "the swinging cut is not shown: $(cat "$work/swing.log")"
  read -r took gave < <(cut_moves <<<"$out")
  # The cut moves the way the split leans: for most micro-batches, or for fewer where that already
  # evens the stages out. How large a share evens them depends on how fast each stage's vCPU is that
  # minute (a sanitizer build, a busier core): 0.5 evened them once where 0.8 usually does.
  busy=$(/usr/bin/python3 -c 'import json,sys; s=json.loads(sys.stdin.read()); t=s["seconds"]; print(" ".join("%.2f" % (b / t) for b in s["busy_seconds"]))' <<<"$out")
  /usr/bin/python3 -c "import sys; t, g = $took, $gave; b = [float(x) for x in '$busy'.split()]
moved, other = (t, g) if '${split##*:}' == 'took' else (g, t)
sys.exit(0 if other < 0.1 and (moved > 0.7 or (moved > 0.3 and abs(b[0] - b[1]) < 0.15)) else 1)" ||
    fail "--stage-layers ${split%%:*}: stage 0 took a layer for a share of $took and gave one for $gave, stages busy $busy of the run: $(cat "$work/swing.log")"
  echo "--stage-layers ${split%%:*}: stage 0 took a layer beside the cut for a share of $took, gave one for $gave"
done
out=$(run --local 2 --fixed-split --output "$work/fixed.safetensors" --micro-batch 16 --json 2>"$work/fixed.log") || fail "--fixed-split: $(cat "$work/fixed.log")"
! grep -q "whichever keeps the two even" "$work/fixed.log" || fail "--fixed-split still swings: $(cat "$work/fixed.log")"
[[ $(cut_moves <<<"$out") == "-1.0 -1.0" ]] || fail "--fixed-split: a layer moved across the cut: $out"
# --stage-layers: a split the user chose (the 8 layers: 6 blocks, norm, head) instead of the balanced one.
out=$(run --local 2 --stage-layers 2,6 --output "$work/split.safetensors" --micro-batch 16 --verify 2>&1) || fail "--stage-layers 2,6: $out"
grep -q "stage 0: layers 0-1 " <<<"$out" && grep -q "stage 1: layers 2-7 " <<<"$out" || fail "--stage-layers 2,6 not followed: $out"
cmp -s "$work/pipe.safetensors" "$work/split.safetensors" || fail "--stage-layers 2,6 output differs from the balanced split's"
echo "--stage-layers 2,6 gives the same file"
# A lopsided split: the run says which stage held the others back and a split that moves layers off it
# (8 blocks, norm and head; stage 0 computes for more than the second the advice needs).
"$CNET_BIN/cnet-run" make-model --output "$work/wide.safetensors" --layers 8 --hidden 256 2>/dev/null
"$CNET_BIN/cnet-run" make-input --output "$work/wide-input.safetensors" --rows 8192 --model "$work/wide.safetensors" 2>/dev/null
out=$("$CNET_BIN/cnet-run" --name t --model "$work/wide.safetensors" --input "$work/wide-input.safetensors" --local 2 --stage-layers 9,1 \
  --output "$work/lopsided.safetensors" --micro-batch 64 2>&1) || fail "--stage-layers 9,1: $out"
grep -Eq "stage 0 held the others back: .* --stage-layers [1-8],([2-9]|10) would even them out" <<<"$out" || fail "no advice for a lopsided split: $out"
echo "a lopsided split is told: $(grep -o -- '--stage-layers [0-9,]*' <<<"$out" | tail -1)"
# --trace: every rank's compute spans, one per micro-batch it computed, in one Chrome trace; a stage
# starts a micro-batch only after the one before it finished it. The run says how busy each stage was.
for args in "--local 2:pipe" "--local 3 --parallel-scheme data:data"; do
  set -- ${args%%:*}
  out=$(run "$@" --output "$work/traced.safetensors" --micro-batch 16 --trace "$work/${args##*:}.trace.json" 2>&1) || fail "$args --trace: $out"
  grep -Eq "computing: (stage|replica) 0 [0-9]+%, (stage|replica) 1 [0-9]+%" <<<"$out" || fail "$args: no busy line: $out"
done
/usr/bin/python3 - "$work/pipe.trace.json" "$work/data.trace.json" <<'PY' || fail "trace"
import json, sys
def spans(path):
    events = json.load(open(path))["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    by_rank = {}
    for e in events:
        if e["ph"] == "X":
            by_rank.setdefault(e["pid"], {})[e["args"]["micro_batch"]] = (e["ts"], e["ts"] + e["dur"])
    return names, by_rank
names, pipe = spans(sys.argv[1])
assert [names[0][:9], names[1][:9]] == ["stage 0/2", "stage 1/2"], names
assert sorted(pipe[0]) == sorted(pipe[1]) == list(range(19)), pipe  # 300 rows in micro-batches of 16
assert all(pipe[1][j][0] >= pipe[0][j][1] for j in range(19)), "stage 1 started a micro-batch before stage 0 finished it"
names, data = spans(sys.argv[2])
assert len(names) == 3 and sorted(j for r in data.values() for j in r) == list(range(19)), data  # each computed once
PY
echo "the trace holds each rank's micro-batches, in pipeline order"
# 16-bit weights (make-model --dtype) run the same way, converted once per stage.
"$CNET_BIN/cnet-run" make-model --output "$work/bf16.safetensors" --layers 6 --hidden 128 --dtype BF16 2>/dev/null
out=$("$CNET_BIN/cnet-run" --name t --model "$work/bf16.safetensors" --input "$work/input.safetensors" --local 2 \
  --output "$work/bf16-out.safetensors" --micro-batch 16 --verify 2>&1) || fail "BF16 model: $out"
grep -q "verify: bit-identical to one process" <<<"$out" || fail "BF16 model not verified: $out"

# A stage killed mid-run: the job ends within 10 s naming the stage; --resume completes it exactly.
make_example "$work" 10 384 3072
run --local 2 --output "$work/ref.safetensors" --micro-batch 8 2>/dev/null || fail "reference run"
log=$work/killed.log
run --local 2 --output "$work/out.safetensors" --micro-batch 8 >"$log" 2>&1 &
kill_rank_mid_run "$log" $! "exe --name t" PMIX_RANK 1
grep -Eq "stage 1/2 \(rank 1 on [^)]+\)|rank 1 was killed by signal 9" "$log" || fail "the dead stage is not named: $(cat "$log")"
# A run that did not finish leaves no file by the output's name: only its .partial and .progress.
[[ ! -e $work/out.safetensors && -f $work/out.safetensors.partial ]] || fail "a killed run left a complete-looking output"
done_before=$(grep -c '^done ' "$work/out.safetensors.progress" || true)
out=$(run --local 2 --output "$work/out.safetensors" --micro-batch 8 --resume --verify 2>&1) || fail "resume: $out"
grep -q "resuming: $done_before of 384 micro-batches already done" <<<"$out" || fail "resume did not skip the $done_before done: $out"
grep -q "bit-identical" <<<"$out" || fail "resumed output not verified: $out"
cmp -s "$work/ref.safetensors" "$work/out.safetensors" || fail "resumed output differs from an undisturbed run"
[[ ! -e $work/out.safetensors.partial ]] || fail "the partial file stayed after the run completed"
[[ $(grep -c '^done ' "$work/out.safetensors.progress") == 384 ]] || fail "progress log does not hold each micro-batch once"
[[ $(sort "$work/out.safetensors.progress" | uniq -d | wc -l) == 0 ]] || fail "a micro-batch was recorded twice"
echo "killed after $done_before micro-batches; resumed to the same bytes as an undisturbed run"
# --resume=auto: a fresh start without a progress file, a resume with one (one script for sbatch --requeue).
out=$(run --local 2 --output "$work/auto.safetensors" --micro-batch 8 --resume=auto 2>&1) || fail "resume=auto, first run: $out"
! grep -q "resuming" <<<"$out" || fail "resume=auto resumed from nothing: $out"
out=$(run --local 2 --output "$work/auto.safetensors" --micro-batch 8 --resume=auto 2>&1) || fail "resume=auto, rerun: $out"
grep -q "resuming: 384 of 384 micro-batches already done, 0 to go" <<<"$out" || fail "resume=auto did not resume: $out"
cmp -s "$work/ref.safetensors" "$work/auto.safetensors" || fail "resume=auto output differs"

# A hung stage (stopped, not dead): the transport's timeout ends the job naming the silent rank.
log=$work/hung.log
run --local 2 --output "$work/hung.safetensors" --micro-batch 8 --timeout 3 >"$log" 2>&1 &
stop_rank_mid_run "$log" $! "exe --name t" PMIX_RANK 0
grep -q "rank 0 on .* did not complete within 3000 ms (peer stalled or hung)" "$log" || fail "the hung stage is not named: $(cat "$log")"
echo "a stopped stage was reported hung after the 3 s timeout"

# Data parallel hands micro-batches out as replicas ask: a replica held up (stopped for 4 s) takes fewer,
# the others take the rest, and the output is still exactly the undisturbed one. Undisturbed, the split
# of this run wanders by 20 micro-batches either way on a busy host, and a 2 s hold in a 5 s sanitizer
# run once left too small a lead; 4 s is worth about 150 micro-batches to the replica that runs on.
log=$work/slowed.log
run --local 2 --parallel-scheme data --output "$work/slowed.safetensors" --micro-batch 8 --json >"$work/slowed.json" 2>"$log" &
job=$!
wait_for_line "$log" "micro-batches, " 60 || fail "no progress line: $(cat "$log")"
slowed=$(pid_with_env "exe --name t" PMIX_RANK 1)
[[ -n $slowed ]] || fail "replica 1 was not found"
kill -STOP "$slowed"
sleep 4
kill -CONT "$slowed"
wait "$job" || fail "a replica held up for 4 s failed the job: $(cat "$log")"
cmp -s "$work/ref.safetensors" "$work/slowed.safetensors" || fail "data parallel with a slowed replica differs from the pipeline's output"
read -r first second < <(/usr/bin/python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["micro_batches_per_replica"])' "$work/slowed.json")
((first + second == 384 && first > second + 10)) || fail "the held-up replica was not left behind: $first and $second micro-batches"
echo "a replica held up for 4 s computed $second micro-batches, the other $first"
# A data-parallel replica killed mid-run: the job ends within 10 s naming it.
log=$work/killed-replica.log
run --local 2 --parallel-scheme data --output "$work/killed-replica.safetensors" --micro-batch 8 >"$log" 2>&1 &
kill_rank_mid_run "$log" $! "exe --name t" PMIX_RANK 1
grep -Eq "replica 1 \(rank 1 on [^)]+\)|rank 1 was killed by signal 9" "$log" || fail "the dead replica is not named: $(cat "$log")"
# The middle of three stages killed or stopped: it sends on activations and reports back what it measured
# at both its cuts; the job still ends within 10 s naming it, and a resume finishes the same bytes.
log=$work/killed-middle.log
run --local 3 --output "$work/middle.safetensors" --micro-batch 8 >"$log" 2>&1 &
kill_rank_mid_run "$log" $! "exe --name t" PMIX_RANK 1
grep -Eq "stage 1/3 \(rank 1 on [^)]+\)|rank 1 was killed by signal 9" "$log" || fail "the dead middle stage is not named: $(cat "$log")"
grep -Eq "layers? [0-9-]+: on stage 1 or 2, whichever" "$log" || fail "the three stages' cuts did not swing: $(cat "$log")"
out=$(run --local 3 --output "$work/middle.safetensors" --micro-batch 8 --resume 2>&1) || fail "resume of three stages: $out"
cmp -s "$work/ref.safetensors" "$work/middle.safetensors" || fail "three stages resumed differ from an undisturbed run"
log=$work/hung-middle.log
run --local 3 --output "$work/hung-middle.safetensors" --micro-batch 8 --timeout 3 >"$log" 2>&1 &
stop_rank_mid_run "$log" $! "exe --name t" PMIX_RANK 1
grep -q "rank 1 on .* did not complete within 3000 ms (peer stalled or hung)" "$log" || fail "the hung middle stage is not named: $(cat "$log")"
echo "the middle of three stages killed, resumed to the same bytes; stopped, reported hung"

# Bad input: exit 2 with the reason, before any rank computes.
expect_bad() {  # expect_bad PATTERN ARGS...
  local pattern=$1 rc=0 out
  shift
  out=$("$CNET_BIN/cnet-run" "$@" 2>&1) || rc=$?
  [[ $rc == 2 ]] || fail "$* gave exit $rc, not 2: $out"
  grep -q -- "$pattern" <<<"$out" || fail "$* did not say '$pattern': $out"
}
m=$work/model.safetensors i=$work/input.safetensors o=$work/bad.safetensors
head -c 100000 "$m" >"$work/truncated.safetensors"
expect_bad "truncated: tensor '" --local 2 --model "$work/truncated.safetensors" --input "$i" --output "$o"
expect_bad "first layer takes rows of width 384" --local 2 --model "$m" --input "$work/pipe.safetensors" --output "$o"
expect_bad "no tensor\|needs a tensor named 'input'\|takes rows" --local 1 --model "$m" --input "$m" --output "$o"
expect_bad "needs 3 ranks" --local 2 --num-stages 3 --model "$m" --input "$i" --output "$o"
# make-input never writes over the model it reads the width from, and a file it writes appears whole.
cp "$m" "$work/model-copy.safetensors"
expect_bad "is the same file as --model" make-input --model "$work/model-copy.safetensors" --output "$work/model-copy.safetensors" --rows 4
cmp -s "$m" "$work/model-copy.safetensors" || fail "make-input damaged the model it was told to read"
"$CNET_BIN/cnet-run" make-input --model "$m" --output "$work/fresh-input.safetensors" --rows 4 2>/dev/null || fail "make-input --rows 4"
ls "$work" | grep -q "\.partial-" && fail "make-input left a partial file: $(ls "$work")"
expect_bad "stage-layers adds up to 9 layers, the model has 12" --local 2 --stage-layers 2,7 --model "$m" --input "$i" --output "$o"
expect_bad "stage-layers names 2 stages, the job has 1 per replica" --local 2 --parallel-scheme data --stage-layers 2,6 --model "$m" --input "$i" --output "$o"
expect_bad "stage-layers: '' is not a layer count" --stage-layers 2,,6 --model "$m" --input "$i" --output "$o"
expect_bad "nothing to resume" --local 2 --resume --model "$m" --input "$i" --output "$work/never.safetensors"
expect_bad "another model, input or micro-batch" --local 2 --resume --micro-batch 4 --model "$m" --input "$i" --output "$work/out.safetensors"
expect_bad "resume takes no value, or =auto" --resume=maybe --model "$m" --input "$i" --output "$o"
expect_bad "micro-batch must be" --micro-batch 0 --model "$m" --input "$i" --output "$o"
expect_bad "pipeline, data or hybrid" --parallel-scheme tensor --model "$m" --input "$i" --output "$o"
expect_bad "dtype must be F32, F16 or BF16" make-model --output "$o" --dtype I8
expect_bad "required" --model "$m"
expect_bad "unrecognised\|unknown option\|unrecognized" --bogus
cmp -s "$work/ref.safetensors" "$work/out.safetensors" || fail "a refused resume touched the output"

# An output that is one of the inputs, by path or by hard link, is refused before anything is written.
sum_before=$(md5sum "$i" "$m" | awk '{print $1}')
ln "$m" "$work/model-link.safetensors"
expect_bad "is the same file as --input" --local 2 --model "$m" --input "$i" --output "$i"
expect_bad "is the same file as --model" --local 2 --model "$m" --input "$i" --output "$work/model-link.safetensors"
expect_bad "is the same file as --model" --local 1 --model "$m" --input "$i" --output "$work/./model.safetensors"
# So is a --trace that would land on one of the job's files.
expect_bad "--trace .* is the same file as --model" --local 2 --model "$m" --input "$i" --output "$o" --trace "$work/model-link.safetensors"
expect_bad "--trace .* is the same file as --input" --local 2 --model "$m" --input "$i" --output "$o" --trace "$work/../${work##*/}/input.safetensors"
expect_bad "--trace .* is the same file as --output" --local 2 --model "$m" --input "$i" --output "$o" --trace "$o"
expect_bad "folder .* does not exist" --local 2 --model "$m" --input "$i" --output "$o" --trace "$work/no/such/trace.json"
expect_bad "--trace needs a file name" --model "$m" --input "$i" --output "$o" --trace ""
! compgen -G "$o*" >/dev/null || fail "a refused --trace run wrote files"
[[ $(md5sum "$i" "$m" | awk '{print $1}') == "$sum_before" ]] || fail "a refused run changed the model or the input"
# Two runs writing one output: the second is refused while the first runs.
run --local 2 --output "$work/shared.safetensors" --micro-batch 8 >"$work/first.log" 2>&1 &
first=$!
wait_for_line "$work/first.log" "micro-batches, " 60 || fail "first run made no progress: $(cat "$work/first.log")"
expect_bad "another cnet-run is writing this output" --local 2 --model "$m" --input "$i" --output "$work/shared.safetensors" --micro-batch 8
wait $first || fail "the first run failed: $(cat "$work/first.log")"
cmp -s "$work/ref.safetensors" "$work/shared.safetensors" || fail "the first run's output was disturbed"

# --gpu-per-stage 1 on a node without a GPU: one line saying why and how to go on, exit 2, nothing
# written. The tools link no CUDA library, so they start on such nodes at all.
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect_bad "no CUDA device found\|built without CUDA" --local 2 --gpu-per-stage 1 --model "$m" --input "$i" --output "$work/gpu.safetensors"
  lines=$("$CNET_BIN/cnet-run" --local 2 --gpu-per-stage 1 --model "$m" --input "$i" --output "$work/gpu.safetensors" 2>&1 | wc -l) || true
  [[ $lines == 1 ]] || fail "--gpu-per-stage 1 without a GPU printed $lines lines, not one"
  ! compgen -G "$work/gpu.safetensors*" >/dev/null || fail "--gpu-per-stage 1 without a GPU wrote files"
fi
CNET_CUDA_STAGE_MODULE=$work/missing.so expect_bad "cannot load the CUDA stage module" --gpu-per-stage 1 --model "$m" --input "$i" --output "$o"
expect_bad "a stage runs on one GPU" --gpu-per-stage 2 --model "$m" --input "$i" --output "$o"
# --stage-devices: CPU and GPU stages in one job. Each wrong use named; an all-CPU list is a CPU run.
expect_bad "'tpu' is neither cpu nor gpu" --local 2 --stage-devices cpu,tpu --model "$m" --input "$i" --output "$o"
expect_bad "give one (--stage-devices gpu is --gpu-per-stage 1)" --local 2 --stage-devices cpu,gpu --gpu-per-stage 1 --model "$m" --input "$i" --output "$o"
expect_bad "give --verify-tolerance" --local 2 --stage-devices cpu,gpu --verify --model "$m" --input "$i" --output "$o"
expect_bad "names 3 stages but the job has 2" --local 2 --stage-devices cpu,cpu,cpu --model "$m" --input "$i" --output "$o"
! compgen -G "$o*" >/dev/null || fail "a refused --stage-devices run wrote files"
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect_bad "--stage-devices cpu,gpu: .*no CUDA device found\|built without CUDA" --local 2 --stage-devices cpu,gpu --model "$m" --input "$i" --output "$o"
fi
out=$(run --local 2 --stage-devices cpu,cpu --output "$work/cpu-list.safetensors" --micro-batch 8 2>&1) || fail "--stage-devices cpu,cpu: $out"
cmp -s "$work/ref.safetensors" "$work/cpu-list.safetensors" || fail "--stage-devices cpu,cpu differs from a CPU run"
for tool in cnet-run cnet-launch cnet-perf cnet-topo cnet-doctor cnet-pool; do
  ! ldd "$CNET_BIN/$tool" | grep -E "libcuda|libcublas|libnccl" || fail "$tool links a CUDA library: it would not start on CPU-only nodes"
done
echo ok
