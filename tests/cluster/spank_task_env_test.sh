#!/usr/bin/env bash
# In every task: the template, the topology cache, a per-step NCCL topology file owned by the user, and
# the NIC of the task's GPU as a DGX-class node would get it (topology from the 32em64t fixture:
# GPU0 on socket 0, GPUs 1-2 and the ConnectX-4 mlx5_0 on socket 1).
source "$(dirname "$0")/lib.sh"

show='echo "$(hostname) $SLURM_LOCALID"; env | grep -E "^(CNET|NCCL|UCX)_" | sort; test -r "$NCCL_TOPO_FILE" && stat -c "topo-owner=%U" "$NCCL_TOPO_FILE" && grep -c "<system version=\"1\">" "$NCCL_TOPO_FILE"'
out=$(on_cluster srun -N2 --ntasks-per-node=2 --gres=gpu:2 --cnet-template=debug -l bash -c "$show")
echo "$out"
for task in 0 1 2 3; do
  grep -q "^$task: CNET_TEMPLATE=debug$" <<<"$out" || fail "task $task lacks CNET_TEMPLATE"
  grep -q "^$task: NCCL_IB_HCA==mlx5_0:1$" <<<"$out" || fail "task $task not given mlx5_0"
  grep -q "^$task: UCX_NET_DEVICES=mlx5_0:1$" <<<"$out" || fail "task $task UCX_NET_DEVICES"
  grep -q "^$task: NCCL_SOCKET_IFNAME==ib0$" <<<"$out" || fail "task $task NCCL_SOCKET_IFNAME"
  grep -q "^$task: topo-owner=root$" <<<"$out" || fail "task $task: NCCL topology file missing or not the job user's"
  grep -q "^$task: CNET_TOPOLOGY=.*/topology-cn[12].json$" <<<"$out" || fail "task $task CNET_TOPOLOGY"
done
expect_eq "$(grep -c ': CNET_GPUS=0$' <<<"$out")" 2 "tasks on GPU 0"
expect_eq "$(grep -c ': CNET_GPUS=1$' <<<"$out")" 2 "tasks on GPU 1"
left=$(on_cluster srun -N1 -w cn1 bash -c 'ls -d /tmp/cnet-* 2>/dev/null | wc -l')
expect_eq "$left" 1 "per-step NCCL folders on cn1 (only this step's own)"

# strict: bound to the cores of the GPU's socket (fixture: socket 0 = PUs 0-7,16-23)
out=$(on_cluster srun -N1 --gres=gpu:1 --cnet-bind=strict bash -c 'echo $CNET_CPU_BIND')
expect_eq "$out" "0-7,16-23" "CPUs for GPU 0 under --cnet-bind=strict"

out=$(on_cluster srun -N1 --gres=gpu:1 --cnet-net=tcp bash -c 'echo $UCX_TLS $NCCL_IB_DISABLE ${NCCL_IB_HCA:-no-hca}')
expect_eq "$out" "tcp,sm,self 1 no-hca" "--cnet-net=tcp"

out=$(on_cluster srun -N1 --gres=gpu:1 --cnet-bind=none bash -c 'echo ${NCCL_IB_HCA:-unset} ${CNET_TOPOLOGY:+topology}')
expect_eq "$out" "unset topology" "--cnet-bind=none keeps the topology but picks no NIC"
