#!/usr/bin/env bash
# Writes a /sys tree for the NICs of the 32em64t fixture (mlx5_0 + ib0 at 04:00.0, eth0/eth1 at
# 81:00.0/.1), so the SPANK plugin on the minicluster sees a real InfiniBand machine's NICs.
#   make_fake_sysfs.sh DIR [ETH1_MTU]     (a second call only changes eth1's MTU)
set -euo pipefail
root=$1 eth1_mtu=${2:-9000}
pci=../../../devices/pci0000:00/0000:00:03.0
mkdir -p "$root"/sys/class/infiniband/mlx5_0/ports/1 "$root"/sys/class/net/{ib0,eth0,eth1}
ln -sfn "$pci/0000:04:00.0" "$root/sys/class/infiniband/mlx5_0/device"
echo "4: ACTIVE" >"$root/sys/class/infiniband/mlx5_0/ports/1/state"
echo "5: LinkUp" >"$root/sys/class/infiniband/mlx5_0/ports/1/phys_state"
echo "100 Gb/sec (4X EDR)" >"$root/sys/class/infiniband/mlx5_0/ports/1/rate"
echo "InfiniBand" >"$root/sys/class/infiniband/mlx5_0/ports/1/link_layer"
ln -sfn "$pci/0000:04:00.0" "$root/sys/class/net/ib0/device"
echo 4092 >"$root/sys/class/net/ib0/mtu"
echo up >"$root/sys/class/net/ib0/operstate"
for i in 0 1; do
  ln -sfn "$pci/0000:81:00.$i" "$root/sys/class/net/eth$i/device"
  echo 10000 >"$root/sys/class/net/eth$i/speed"
  echo up >"$root/sys/class/net/eth$i/operstate"
done
echo 9000 >"$root/sys/class/net/eth0/mtu"
echo "$eth1_mtu" >"$root/sys/class/net/eth1/mtu"
