#!/usr/bin/env bash
# A whole node dies under a cnet-run pipeline batch job (slurmd, slurmstepd and the stage, at once):
# the job's srun ends within 10 s naming the dead stage's node, the batch script requeues itself
# (sbatch --requeue; exit 3 means a stage failed, so a rerun can help), the node comes back, and the
# rerun resumes from OUTPUT.progress to the same bytes as an undisturbed run: nothing lost or doubled.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cnet_run_lib.sh"
eval "$("$CNET_MINICLUSTER" env)"
work=$CNET_BUILD_DIR/test-work/node-fail
rm -rf "$work" && mkdir -p "$work"
cd "$work"
trap '"$CNET_MINICLUSTER" start-node cn2 >/dev/null 2>&1 || true' EXIT
make_example "$work" 12 512 8192
args=(--model model.safetensors --input input.safetensors --micro-batch 8)
srun -N2 --ntasks-per-node=1 --cnet-bind=none "$CNET_BIN/cnet-run" --name node-fail "${args[@]}" --output ref.safetensors \
  >/dev/null 2>&1 || fail "undisturbed reference run"

# The pattern the user guide shows: requeue only when a stage failed, not on bad input (exit 2).
cat >job.sh <<SH
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --requeue --open-mode=append -o $work/job.%j.log
echo "run \${SLURM_RESTART_COUNT:-0}"
srun --cnet-bind=none "$CNET_BIN/cnet-run" --name node-fail ${args[*]} --output out.safetensors --resume=auto
rc=\$?
[[ \$rc == 3 ]] && exec scontrol requeue "\$SLURM_JOB_ID"
exit \$rc
SH
job=$(sbatch --parsable -D "$work" job.sh) || fail "sbatch"
log=$work/job.$job.log
wait_for_line "$log" "micro-batches, " 60 || fail "no progress line: $(cat "$log" 2>&1)"
"$CNET_MINICLUSTER" kill-node cn2
killed=$SECONDS
wait_for_line "$log" "stage 1/2 (rank 1 on cn2) failed" 10 || fail "the dead node is not named within 10 s: $(cat "$log")"
echo "failure reported after $((SECONDS - killed)) s"
"$CNET_MINICLUSTER" start-node cn2

state=
for ((i = 0; i < 180; i++)); do
  state=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED ]] && break
  sleep 1
done
cat "$log"
expect_eq "$state" COMPLETED "the requeued job's state"
restarts=$(scontrol show job "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
((restarts >= 1)) || fail "the job was not requeued (Restarts=$restarts)"
grep -q "^run 1" "$log" || fail "the rerun did not start"
grep -q "resuming: [1-9][0-9]* of 1024 micro-batches already done" "$log" || fail "the rerun redid everything"
# Slurm's mpi/pmix leftovers from the killed first run would have failed the rerun's launch on cn2.
grep -q "cnet: removed .*stepd.slurm.pmix.$job.0, left on this node by an earlier run" "$CNET_MINICLUSTER_DIR/log/slurmd.cn2.log" ||
  fail "the cnet SPANK plugin did not clear the killed step's PMIx state on cn2"
cmp -s ref.safetensors out.safetensors || fail "the resumed output differs from an undisturbed run"
echo ok
