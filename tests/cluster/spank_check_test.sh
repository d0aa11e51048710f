#!/usr/bin/env bash
# --cnet-check: a healthy node passes; an MTU mismatch between eth0 and eth1 stops the step before the
# user's program runs, naming the node and the NICs.
source "$(dirname "$0")/lib.sh"
trap 'bash "$(dirname "$0")/make_fake_sysfs.sh" "$CNET_FAKE_SYSFS" 9000' EXIT

out=$(on_cluster srun -N2 --cnet-check echo ran)
expect_eq "$out" $'ran\nran' "healthy nodes"

bash "$(dirname "$0")/make_fake_sysfs.sh" "$CNET_FAKE_SYSFS" 1500
marker=/tmp/cnet-check-ran-$$
# Under --cnet-net=tcp the job uses the Ethernet NICs, whose MTUs then must agree; by default its fabric is
# the RDMA NIC, and a mismatch between two other ports is not its concern.
out=$(on_cluster srun -N1 -w cn2 --cnet-check echo ran)
expect_eq "$out" ran "an Ethernet MTU mismatch beside the RDMA fabric"
if err=$(on_cluster srun -N1 -w cn2 --cnet-check --cnet-net=tcp touch $marker 2>&1); then fail "--cnet-check let a mismatched node run"; fi
echo "$err"
[[ $err == *"cnet: cn2: --cnet-check: eth: MTU differs between NICs of the same fabric: eth0=9000, eth1=1500"* ]] ||
  fail "the error does not name the node and NICs"
[[ $(on_cluster srun -N1 -w cn2 bash -c "test -e $marker && echo ran || echo not-run") == not-run ]] ||
  fail "the user's program ran despite the failed check"
