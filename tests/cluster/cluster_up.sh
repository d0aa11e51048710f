#!/usr/bin/env bash
# Fixture set-up: a fresh cluster, even if an interrupted run left one behind in the same folder.
# The cnet SPANK plugin sees the 32em64t machine (3 GPUs, a ConnectX-4) through CNET_SPANK_ARGS.
set -euo pipefail
bash "$(dirname "$0")/make_fake_sysfs.sh" "$CNET_FAKE_SYSFS"
"$CNET_MINICLUSTER" down >/dev/null
# With gres/rdma built, every node also has two fake RDMA NICs (mlx5_0, mlx5_1).
rdma=()
[[ -f $CNET_BUILD_DIR/plugins/gres_rdma.so ]] && rdma=(--rdma 2)
"$CNET_MINICLUSTER" up "$1" "${rdma[@]}"
