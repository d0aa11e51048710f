#!/usr/bin/env bash
# contrib/examples/template-job.sbatch works as written: the template reaches every step, the preflight
# passes, and each rank is given its GPU's NIC.
source "$(dirname "$0")/lib.sh"

work=$(mktemp -d /var/tmp/cnet-sbatch-XXXXXX)  # not /tmp: each node has its own
job=
trap '[[ -z $job ]] || on_cluster scancel "$job" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cd "$work"
job=$(on_cluster sbatch --parsable "$(dirname "$(readlink -f "$0")")/../../contrib/examples/template-job.sbatch")
wait_job "$job" 100
out=$(cat cnet-template-demo-*.out)
echo "$out"
expect_eq "$(sort <<<"$out")" $'cn1 rank 0: template infer-small, GPU 0, NIC mlx5_0, NCCL_IB_HCA =mlx5_0:1\ncn2 rank 1: template infer-small, GPU 0, NIC mlx5_0, NCCL_IB_HCA =mlx5_0:1' "example output"
