#!/usr/bin/env bash
# Nodes with networks of their own (the minicluster's default): each node's eth0 on a private bridge, cn2 at MTU
# 1500 while the others have 9000, cn3's link shaped to 200 Mbit/s. What only separate networks show:
# UCX and the bootstrap use the node's own interface, MASTER_ADDR is rank 0's node address and gloo
# all_reduce crosses the namespaces, cnet-doctor --job names the MTU mismatch, the slow link is flagged
# against a baseline, and a link pulled mid-job ends the job naming the node, whose requeued rerun
# resumes to the same bytes. The cluster is this test's own; it is taken down also when a check fails.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cnet_run_lib.sh"
export CNET_MINICLUSTER_DIR=$CNET_BUILD_DIR/minicluster-net
unset CNET_SPANK_ARGS  # cnet.so describes each node as it is (the fixture cluster's describes a recorded machine)
work=$CNET_BUILD_DIR/test-work/network
rm -rf "$work" && mkdir -p "$work"
cd "$work"
trap '"$CNET_MINICLUSTER" down >/dev/null 2>&1 || true' EXIT
"$CNET_MINICLUSTER" up 3 --net --mtu cn2=1500 --rate cn3=200mbit || fail "minicluster up 3 --net"
eval "$("$CNET_MINICLUSTER" env)"
prefix=$(sed -n 's/^NodeName=cn1 .*NodeAddr=\([0-9.]*\)\.1 .*/\1/p' "$SLURM_CONF")
[[ $prefix =~ ^10\.[0-9]+\.[0-9]+$ ]] || fail "cn1 has no private NodeAddr: $(grep ^NodeName "$SLURM_CONF")"

# Each node sees only its own eth0 (and lo), with its own address and MTU; node names resolve there.
out=$(srun -N3 bash -c 'echo $(hostname) $(ls /sys/class/net | tr "\n" " ")$(cat /sys/class/net/eth0/mtu) $(ip -4 -o addr show eth0 | awk "{print \$4}") $(getent hosts cn3 | cut -d" " -f1)' | sort)
expect_eq "$out" "cn1 eth0 lo 9000 $prefix.1/24 $prefix.3
cn2 eth0 lo 1500 $prefix.2/24 $prefix.3
cn3 eth0 lo 9000 $prefix.3/24 $prefix.3" "each node's network"

# UCX's channel between two nodes goes over their eth0, not lo.
out=$(srun --mpi=pmix --cnet-bind=none -N2 -w cn1,cn3 "$CNET_BIN/cnet-perf" p2p --max-size 8 --iters 5) || fail "cnet-perf cn1-cn3: $out"
grep -q "^# cnet-perf p2p: 2 ranks on cn1,cn3 (transports tcp/eth0)" <<<"$out" || fail "UCX did not use the nodes' eth0: $out"

# cnet-launch: MASTER_ADDR is rank 0's node address, and gloo reaches it from the other namespace.
out=$(srun --mpi=pmix -N2 -w cn1,cn3 --ntasks-per-node=2 "$CNET_BIN/cnet-launch" -- /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/torch_allreduce.py" 2>&1) ||
  fail "torch job across namespaces: $out"
for r in 0 1 2 3; do grep -q "^rank $r/4 node $((r / 2)) local $((r % 2)) sum 10 pairs 4$" <<<"$out" || fail "rank $r: $out"; done
addrs=$(srun --mpi=pmix -N2 -w cn1,cn3 "$CNET_BIN/cnet-launch" --dry-run --json 2>/dev/null |
  /usr/bin/python3 -c 'import json,sys; print(" ".join(sorted({json.loads(l)["env"]["MASTER_ADDR"] for l in sys.stdin})))')
expect_eq "$addrs" "$prefix.1" "MASTER_ADDR on both nodes"

# MTU mismatch: --job names cn2 and its MTU; a 4 MiB transfer across the pair still completes (TCP
# takes the smaller MSS; RDMA would not).
printf 'clock = off\nswap = off\nmemlock = off\nlimits = off\nsysctl = off\nfirewall = off\n' >doctor.conf
rc=0
out=$(srun --mpi=pmix --cnet-bind=none -N3 "$CNET_BIN/cnet-doctor" --job --config "$work/doctor.conf" 2>&1) || rc=$?
echo "$out"
expect_eq "$rc" 1 "cnet-doctor --job exit code with an MTU mismatch"
grep -q "^cn2 .*job_network/mtu 1500 (most nodes: 9000)" <<<"$out" || fail "cn2's MTU not named: $out"
grep -E "^cn[13] " <<<"$out" | grep -q "mtu" && fail "a 9000 node blamed for the MTU: $out"
# The source article's own pool, two machines one of which lacks jumbo frames: no majority to blame,
# yet the job is told, each node's MTU named, exit 1.
rc=0
out=$(srun --mpi=pmix --cnet-bind=none -N2 -w cn1,cn2 "$CNET_BIN/cnet-doctor" --job --config "$work/doctor.conf" 2>&1) || rc=$?
echo "$out"
expect_eq "$rc" 1 "cnet-doctor --job exit code, two nodes with different MTUs"
grep -q "^job: cn1 9000, cn2 1500: MTU differs across the job" <<<"$out" || fail "the two nodes' MTUs not named: $out"
out=$(srun --mpi=pmix --cnet-bind=none -N2 -w cn1,cn2 "$CNET_BIN/cnet-perf" p2p --min-size 4194304 --max-size 4194304 --iters 10) ||
  fail "4 MiB across the MTU mismatch: $out"

# The shaped link: a baseline saved on a full-speed pair flags cn1-cn3, and --job's table shows cn3 slower.
srun --mpi=pmix --cnet-bind=none -N2 -w cn1,cn2 "$CNET_BIN/cnet-perf" p2p --min-size 1048576 --max-size 1048576 --iters 20 \
  --save-baseline "$work/link.json" >/dev/null || fail "baseline on cn1-cn2"
rc=0
err=$(srun --mpi=pmix --cnet-bind=none -N2 -w cn1,cn3 "$CNET_BIN/cnet-perf" p2p --min-size 1048576 --max-size 1048576 --iters 20 \
  --compare-baseline "$work/link.json" 2>&1 >/dev/null) || rc=$?
expect_eq "$rc" 1 "cnet-perf exit code on the shaped link"
grep -q "regressed: 1 MiB: bandwidth" <<<"$err" || fail "the slow pair is not flagged: $err"
gbps() { awk -v n="$1" '$1 == n { print $3 }' <<<"$2"; }
out=$(srun --mpi=pmix --cnet-bind=none -N3 "$CNET_BIN/cnet-doctor" --job --config "$work/doctor.conf" 2>&1) || true
/usr/bin/python3 -c 'import sys; cn2, cn3 = float(sys.argv[1]), float(sys.argv[2]); assert cn3 < 0.5 * cn2, (cn2, cn3)' \
  "$(gbps cn2 "$out")" "$(gbps cn3 "$out")" || fail "--job does not show cn3's link slower than cn2's: $out"

# A link pulled under a 2-stage pipeline: no connection is reset, so the stage waiting on cn2 gives up
# after the transport timeout (--timeout 10) naming it; the job requeues itself, and once the link is
# back the rerun resumes to the bytes of an undisturbed run.
make_example "$work" 12 512 8192
args=(--model model.safetensors --input input.safetensors --micro-batch 8)
srun -N2 -w cn1,cn2 --cnet-bind=none "$CNET_BIN/cnet-run" --name link-down "${args[@]}" --output ref.safetensors >/dev/null 2>&1 ||
  fail "undisturbed reference run"
cat >job.sh <<SH
#!/bin/bash
#SBATCH -N2 -w cn1,cn2 --ntasks-per-node=1 --requeue --open-mode=append -o $work/job.%j.log
echo "run \${SLURM_RESTART_COUNT:-0}"
srun --cnet-bind=none "$CNET_BIN/cnet-run" --name link-down ${args[*]} --output out.safetensors --resume=auto --timeout 10
rc=\$?
[[ \$rc == 3 ]] && exec scontrol requeue "\$SLURM_JOB_ID"
exit \$rc
SH
job=$(sbatch --parsable -D "$work" job.sh) || fail "sbatch"
log=$work/job.$job.log
wait_for_line "$log" "micro-batches, " 60 || fail "no progress line: $(cat "$log" 2>&1)"
"$CNET_MINICLUSTER" link-down cn2
pulled=$SECONDS
wait_for_line "$log" "rank 1 on cn2" 25 || { "$CNET_MINICLUSTER" link-up cn2; fail "cn2 is not named within 25 s: $(cat "$log")"; }
echo "failure reported after $((SECONDS - pulled)) s"
"$CNET_MINICLUSTER" link-up cn2
state=
for ((i = 0; i < 180; i++)); do
  state=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED ]] && break
  sleep 1
done
cat "$log"
expect_eq "$state" COMPLETED "the requeued job's state"
grep -q "^run 1" "$log" || fail "the rerun did not start"
grep -q "resuming: [1-9][0-9]* of 1024 micro-batches already done" "$log" || fail "the rerun redid everything"
cmp -s ref.safetensors out.safetensors || fail "the resumed output differs from an undisturbed run"

base=$(cat "$CNET_MINICLUSTER_DIR/run/base_port")
"$CNET_MINICLUSTER" down
trap - EXIT
ip netns list | grep -q "^cnet$base-" && fail "namespaces left behind: $(ip netns list | grep "^cnet$base-")"
ip link show "cnh$base" >/dev/null 2>&1 && fail "the host's end of the bridge, cnh$base, was left behind"
echo ok
