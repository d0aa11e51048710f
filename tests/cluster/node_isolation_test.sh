#!/usr/bin/env bash
# Each node has its own hostname and its own /tmp, as separate machines would.
source "$(dirname "$0")/lib.sh"

marker=cnet-isolation-$$
on_cluster srun -N1 -w cn1 bash -c "echo \$(hostname) > /tmp/$marker"
seen_on_cn1=$(on_cluster srun -N1 -w cn1 cat /tmp/$marker)
expect_eq "$seen_on_cn1" cn1 "file written on cn1 read back on cn1"
seen_on_cn2=$(on_cluster srun -N1 -w cn2 bash -c "cat /tmp/$marker 2>/dev/null || echo absent")
expect_eq "$seen_on_cn2" absent "cn1's /tmp file seen from cn2"
[[ ! -e /tmp/$marker ]] || fail "node /tmp file leaked to the host's /tmp"
on_cluster srun -N1 -w cn1 rm -f /tmp/$marker
