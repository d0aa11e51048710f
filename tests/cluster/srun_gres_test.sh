#!/usr/bin/env bash
# srun across two nodes with --gres=gpu: distinct hostnames and CUDA_VISIBLE_DEVICES from gres/gpu.
source "$(dirname "$0")/lib.sh"

out=$(on_cluster srun -N2 --ntasks-per-node=1 --gres=gpu:1 bash -c 'echo "$(hostname) ${CUDA_VISIBLE_DEVICES-unset}"' | sort)
echo "$out"
expect_eq "$out" $'cn1 0\ncn2 0' "one GPU per node"

out=$(on_cluster srun -N2 --ntasks-per-node=1 --gres=gpu:2 bash -c 'echo "$(hostname) ${CUDA_VISIBLE_DEVICES-unset}"' | sort)
echo "$out"
expect_eq "$out" $'cn1 0,1\ncn2 0,1' "two GPUs per node"

# Each node has two GPUs; asking for three must be refused, not silently granted.
if err=$(on_cluster srun -N1 --gres=gpu:3 --immediate=5 true 2>&1); then fail "gpu:3 on a 2-GPU node was granted"; fi
echo "$err"
[[ $err == *"Requested node configuration is not available"* ]] || fail "unexpected error for gpu:3: $err"
