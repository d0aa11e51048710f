#!/usr/bin/env bash
# gres/rdma on the minicluster (2 fake RDMA NICs per node, mlx5_0 and mlx5_1): they are schedulable
# GRES, a step's tasks get the allocated devices as CNET_RDMA_DEVICES, NCCL_IB_HCA and UCX_NET_DEVICES,
# a step without them gets none, and a job asking for more than a node has waits instead of running.
source "$(dirname "$0")/lib.sh"
[[ -f $CNET_BUILD_DIR/plugins/gres_rdma.so ]] || fail "gres_rdma.so not built (configure with -DCNET_SLURM_SOURCE)"
step() { on_cluster srun --cnet-bind=none "$@"; }

expect_eq "$(on_cluster sinfo -h -n cn1 -o %G)" "gpu:2,rdma:mlx5_0:1(S:0),rdma:mlx5_1:1(S:0)" "cn1's GRES"
out=$(step -N2 --gres=rdma:1 bash -c 'echo "$(hostname) $CNET_RDMA_DEVICES $NCCL_IB_HCA $UCX_NET_DEVICES"' | sort)
expect_eq "$out" $'cn1 mlx5_0 =mlx5_0:1 mlx5_0:1\ncn2 mlx5_0 =mlx5_0:1 mlx5_0:1' "one RDMA NIC per node"
out=$(step -N1 --gres=rdma:mlx5_1:1 bash -c 'echo "$CNET_RDMA_DEVICES $NCCL_IB_HCA"')
expect_eq "$out" "mlx5_1 =mlx5_1:1" "a NIC asked for by type"
out=$(step -N1 --gres=rdma:2 bash -c 'echo "$CNET_RDMA_DEVICES"')
expect_eq "$out" "mlx5_0,mlx5_1" "both NICs"
out=$(step -N1 bash -c 'echo "[${CNET_RDMA_DEVICES:-}]"')
expect_eq "$out" "[]" "a step without rdma"

# While one job holds both NICs of cn1, a second that needs one there waits.
eval "$("$CNET_MINICLUSTER" env)"
holder=$(cd /var/tmp && sbatch --parsable -w cn1 --gres=rdma:2 --wrap "sleep 60")
waiter=$(cd /var/tmp && sbatch --parsable -w cn1 --gres=rdma:1 --wrap true)
trap 'scancel "$holder" "$waiter" 2>/dev/null' EXIT
for ((i = 0; i < 50; i++)); do
  [[ $(squeue -h -j "$holder" -o %T) == RUNNING && $(squeue -h -j "$waiter" -o %r) == Resources ]] && break
  sleep 0.2
done
expect_eq "$(squeue -h -j "$holder" -o %T)" RUNNING "the job holding both NICs"
expect_eq "$(squeue -h -j "$waiter" -o %T)" PENDING "the job that needs one more"
expect_eq "$(squeue -h -j "$waiter" -o %r)" Resources "why it waits"
echo ok
