#!/usr/bin/env bash
# gres/rdma must never take slurmctld or slurmd down, and a skipped one must not go unnoticed. On a
# cluster of its own: State=CLOUD nodes (slurmctld loads their gres, with no devices) and a Count= line
# without a device file; the cluster starts, schedules --gres=rdma, survives reconfigure with a missing
# device file and a broken File= range, and a CLOUD node that registers (CLOUD -> IDLE) runs jobs. Then
# a gres_rdma.so that looks built for another Slurm release: slurmd skips it, jobs still run, and both
# the step's stderr and cnet-doctor say why the NIC variables are missing.
source "$(dirname "$0")/lib.sh"
[[ -f $CNET_BUILD_DIR/plugins/gres_rdma.so ]] || fail "gres_rdma.so not built (configure with -DCNET_SLURM_SOURCE)"
work=$(mktemp -d /var/tmp/cnet-gres-XXXXXX)
export CNET_MINICLUSTER_DIR=$work/state
trap '"$CNET_MINICLUSTER" down >/dev/null 2>&1; rm -rf "$work"' EXIT
mc() { "$CNET_MINICLUSTER" "$@"; }
alive() {  # every daemon the cluster started is still running
  local f
  for f in "$CNET_MINICLUSTER_DIR"/run/*.pid; do kill -0 "$(cat "$f")" 2>/dev/null || fail "$(basename "$f" .pid) died $1"; done
}
devices() { mc run -- timeout 60 srun --cnet-bind=none "$@" bash -c 'echo "$(hostname) [${CNET_RDMA_DEVICES:-}]"' | sort | tr '\n' ' '; }

mc up 2 --rdma 2 --cloud 1
alive "loading a CLOUD node's Count= rdma line"
expect_eq "$(devices -N2 --gres=rdma:1)" "cn1 [mlx5_0] cn2 [mlx5_0] " "--gres=rdma:1 on both nodes"

mc start-node cloud1
for ((i = 0; i < 50; i++)); do [[ $(mc run -- sinfo -h -n cloud1 -o %t) == idle ]] && break; sleep 0.2; done
expect_eq "$(mc run -- sinfo -h -n cloud1 -o %t)" idle "cloud1 after it registered"
expect_eq "$(devices -w cloud1 --gres=rdma:1)" "cloud1 [] " "a Count= rdma NIC: schedulable, no device to name"
alive "running a job on a node without rdma device files"

# Reconfigure, with one device file gone and a File= range that does not parse: logged, not fatal.
gres=$CNET_MINICLUSTER_DIR/etc/gres.conf
rm "$CNET_MINICLUSTER_DIR/nodes/cn2/dev/uverbs1"
echo "NodeName=cn2 Name=rdma Type=mlx5_7 File=$CNET_MINICLUSTER_DIR/nodes/cn2/dev/uverbs[7-" >>"$gres"
mc run -- scontrol reconfigure
sleep 3
alive "reconfigure with a missing device and a broken File= range"
mc run -- scontrol reconfigure
sleep 2
alive "a second reconfigure"
expect_eq "$(devices -w cn1 --gres=rdma:2)" "cn1 [mlx5_0,mlx5_1] " "cn1's names after reconfigure"
expect_eq "$(devices -w cloud1 --gres=rdma:1)" "cloud1 [] " "the CLOUD node after reconfigure"
mc down >/dev/null
echo "daemons stayed up through CLOUD nodes, Count= lines, missing devices and reconfigure"

# A gres_rdma.so built for another release next to this one's cnet.so: what mixed packages look like.
mkdir -p "$work/plugins"
cp "$CNET_BUILD_DIR"/plugins/*.so "$work/plugins/"
other_hex=0x180b05 other=24.11.5  # the other release cnet is built for
at_least_release 23.02 && other_hex=0x160508 other=22.05.8
"$CNET_BIN/set_plugin_version" "$work/plugins/gres_rdma.so" "$other_hex"
CNET_PLUGIN_DIR=$work/plugins mc up 1 --rdma 1
grep -q "Incompatible Slurm plugin .*gres_rdma.so version ($other)" "$CNET_MINICLUSTER_DIR"/log/slurmd.cn1.log ||
  fail "slurmd did not skip the other release's plugin"
err=$(mc run -- timeout 60 srun --gres=rdma:1 bash -c 'echo "[${CNET_RDMA_DEVICES:-}]"' 2>&1 >"$work/out")
expect_eq "$(cat "$work/out")" "[]" "no RDMA variables from a skipped gres/rdma"
[[ $err == *"cnet: cn1: slurm.conf's GresTypes names rdma, but gres/rdma is not loaded in this step"* ]] ||
  fail "the step was not told: $err"
rc=0
out=$("$CNET_BIN/cnet-doctor" --slurm-conf "$CNET_MINICLUSTER_DIR/etc/slurm.conf" --node cn1 --nodes cn1 2>&1) || rc=$?
echo "$out" | grep plugins
grep -q "^fail  plugins .*gres_rdma.so was built for Slurm $other, but this node runs Slurm $slurm_release" <<<"$out" ||
  fail "cnet-doctor did not name the mismatch: $out"
expect_eq "$rc" 1 "cnet-doctor's exit code"
echo ok
