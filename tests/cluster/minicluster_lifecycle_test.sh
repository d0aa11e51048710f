#!/usr/bin/env bash
# A second, 3-node cluster beside the fixture one: its own ports, three distinct hostnames, and `down`
# leaves no process and no state behind. Its cnet.so is pointed at a topology that does not exist: jobs
# must still run, and only what needs the topology is refused, with the reason.
source "$(dirname "$0")/lib.sh"

fixture_conf=$CNET_MINICLUSTER_DIR/etc/slurm.conf
second=$(mktemp -d /var/tmp/cnet-second-XXXXXX)
export CNET_MINICLUSTER_DIR=$second/state CNET_SPANK_ARGS="hwloc_xml=$second/missing-topology.xml"
trap '"$CNET_MINICLUSTER" down >/dev/null 2>&1; rm -rf "$second"' EXIT

# A block claimed by a cluster that is still starting (nothing listens yet) is not taken, whatever
# folder that cluster lives in; the claim is made the way `up` makes its own.
registry=${CNET_MINICLUSTER_REGISTRY:-/run/cnet-minicluster}
claimed=""
for ((base = 17000; base < 18000; base += 64)); do
  ss -Htln "sport = :$base" | grep -q . || [[ -e $registry/$base ]] || { claimed=$base; break; }
done
[[ -n $claimed ]] || fail "no free block to claim"
mkdir -p "$second/starting/run" "$registry/$claimed"
echo "$second/starting" >"$registry/$claimed/state"
sleep 60 & echo $! >"$second/starting/run/slurmctld.pid"
trap 'kill %1 2>/dev/null || true; rm -rf "$registry/$claimed"; "$CNET_MINICLUSTER" down >/dev/null 2>&1; rm -rf "$second"' EXIT

"$CNET_MINICLUSTER" up 3
[[ $(grep '^SlurmctldPort=' "$CNET_MINICLUSTER_DIR/etc/slurm.conf") != "SlurmctldPort=$claimed" ]] ||
  fail "took port block $claimed, which a starting cluster elsewhere had claimed"
kill %1
first_port=$(grep '^SlurmctldPort=' "$fixture_conf")
second_port=$(grep '^SlurmctldPort=' "$CNET_MINICLUSTER_DIR/etc/slurm.conf")
[[ $first_port != "$second_port" ]] || fail "second cluster reuses the fixture's $first_port"
pids=$(cat "$CNET_MINICLUSTER_DIR"/run/*.pid)
expect_eq "$(wc -w <<<"$pids")" 5 "recorded daemons (munged, slurmctld, 3 slurmd)"

hosts=$("$CNET_MINICLUSTER" run -- timeout 60 srun -N3 hostname | sort | tr '\n' ' ')
expect_eq "$hosts" "cn1 cn2 cn3 " "hostnames of srun -N3"
out=$("$CNET_MINICLUSTER" run -- timeout 60 srun -N1 --cnet-template=debug bash -c 'echo $CNET_TEMPLATE' 2>/dev/null)
expect_eq "$out" debug "a job under a template on a node without topology"
if err=$("$CNET_MINICLUSTER" run -- timeout 60 srun -N1 --cnet-check true 2>&1); then fail "--cnet-check passed without a topology"; fi
[[ $err == *"cnet: cn1: --cnet-check cannot look at this node's NICs: cannot read hwloc XML '$second/missing-topology.xml'"* ]] ||
  fail "no reason given: $err"
if err=$("$CNET_MINICLUSTER" run -- timeout 60 srun -N1 --cnet-bind=strict true 2>&1); then fail "--cnet-bind=strict ran without a topology"; fi
[[ $err == *"no node topology, so --cnet-bind/--cnet-net/--cnet-check cannot be honoured: cannot read hwloc XML"* ]] ||
  fail "no reason given for --cnet-bind: $err"
# What needs no topology still runs: --cnet-bind=none asks for nothing, =closest is the default, which
# runs without a NIC choice (and says so).
out=$("$CNET_MINICLUSTER" run -- timeout 60 srun -N1 --cnet-bind=none echo ran 2>&1) || fail "--cnet-bind=none was refused without a topology: $out"
[[ $out == *ran* ]] || fail "--cnet-bind=none: $out"
out=$("$CNET_MINICLUSTER" run -- timeout 60 srun -N1 --cnet-bind=closest echo ran 2>&1) || fail "--cnet-bind=closest was refused without a topology: $out"
[[ $out == *ran* && $out == *"no node topology, so no NIC is chosen for this task"* ]] || fail "--cnet-bind=closest ran without saying why it chose no NIC: $out"

"$CNET_MINICLUSTER" down
for p in $pids; do kill -0 "$p" 2>/dev/null && fail "pid $p still running after down"; done
[[ ! -e $CNET_MINICLUSTER_DIR ]] || fail "state folder left behind"

# A folder minicluster did not make is never removed, by down or by up.
mkdir -p "$second/precious" && echo keep >"$second/precious/data"
for cmd in down "up 1"; do
  if out=$(CNET_MINICLUSTER_DIR=$second/precious "$CNET_MINICLUSTER" $cmd 2>&1); then fail "'$cmd' on a foreign folder succeeded"; fi
  [[ $out == *"was not made by minicluster"* ]] || fail "'$cmd' gave no reason: $out"
  [[ -f $second/precious/data ]] || fail "'$cmd' removed a folder it did not make"
done
# The network's knobs are checked before anything starts, each refusal naming the fix.
for bad in "2 --host-net --mtu cn2=1500|drop --host-net" "2 --rdma 1 --cloud 1 --net|drop --net" \
           "2 --net --mtu cn3=1500|cn3 is not a node of this cluster" \
           "2 --net --mtu cn2=15|'15' for cn2 is not valid" "2 --net --rate cn1=fast|'fast' for cn1 is not valid" \
           "2 --net --mtu cn2|not NODE=VALUE"; do
  if out=$("$CNET_MINICLUSTER" up ${bad%%|*} 2>&1); then "$CNET_MINICLUSTER" down >/dev/null; fail "up ${bad%%|*} started"; fi
  [[ $out == *"${bad#*|}"* ]] || fail "up ${bad%%|*}: $out"
done
[[ ! -e $CNET_MINICLUSTER_DIR/run ]] || fail "a refused up left state behind"
if out=$("$CNET_MINICLUSTER" link-down cn1 2>&1); then fail "link-down without a cluster"; fi
# A step of --net's set-up failing (here tc) stops it there and removes every namespace and veth made so far.
mkdir -p "$second/bin" && printf '#!/bin/sh\necho "tc: refused by the test" >&2\nexit 1\n' >"$second/bin/tc" && chmod +x "$second/bin/tc"
namespaces=$(ip netns list | grep -c '^cnet' || true) links=$(ip -o link show | grep -c ': cnh' || true)
if out=$(PATH=$second/bin:$PATH "$CNET_MINICLUSTER" up 2 --net --rate cn1=1gbit 2>&1); then fail "up --net with a failing tc started"; fi
[[ $out == *"tc: refused by the test"*"could not make the nodes' network"* ]] || fail "the failed set-up gave no reason: $out"
expect_eq "$(ip netns list | grep -c '^cnet' || true) $(ip -o link show | grep -c ': cnh' || true)" "$namespaces $links" "namespaces and veths after a failed --net set-up"
[[ ! -e $CNET_MINICLUSTER_DIR ]] || fail "a failed --net set-up left its state folder"

echo "second cluster on $second_port (fixture: $first_port) came up and went down cleanly"
