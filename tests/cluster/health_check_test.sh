#!/usr/bin/env bash
# cnet-doctor as slurm.conf's HealthCheckProgram on the minicluster: a node failing a check (here a
# firewall rule dropping slurmd's port, given to it as iptables-save output; munged out of reach, by hand)
# is drained with the reason,
# jobs go to the other node, and once healthy the node is resumed by cnet-doctor, which drained it.
source "$(dirname "$0")/lib.sh"
eval "$("$CNET_MINICLUSTER" env)"
work=$CNET_BUILD_DIR/test-work/health
rm -rf "$work" && mkdir -p "$work"
conf=$SLURM_CONF
cp "$conf" "$work/slurm.conf.orig"
restore() { cp "$work/slurm.conf.orig" "$conf"; scontrol reconfigure; scontrol update NodeName=cn1 State=RESUME 2>/dev/null || true; }
trap restore EXIT

# Only the firewall check decides here (the shared test machine's clock, swap and NICs are not ours).
cat >"$work/doctor.conf" <<CONF
clock = off
swap = off
nics = off
memlock = off
dns = fail
gres = fail
firewall = fail
CONF
cat >"$work/health-check" <<SH
#!/bin/sh
exec "$CNET_BIN/cnet-doctor" --health-check --config "$work/doctor.conf" --slurm-conf "$conf" --firewall-rules "$work/rules.\$(hostname)"
SH
chmod +x "$work/health-check"
port=$(sed -n 's/^SlurmdPort=//p' "$conf")
echo "-A INPUT -p tcp -m tcp --dport $port -j DROP" >"$work/rules.cn1"

# The same verdict by hand first, with the exit code and the table a person sees.
rc=0
out=$("$CNET_BIN/cnet-doctor" --config "$work/doctor.conf" --slurm-conf "$conf" --firewall-rules "$work/rules.cn1" --node cn1) || rc=$?
expect_eq "$rc" 1 "cnet-doctor's exit code for a failing check"
grep -q "^fail  firewall .*blocks Slurm port $port" <<<"$out" || fail "firewall finding: $out"
# munge as Slurm uses it: the cluster's munged (AuthInfo socket=) makes a credential that decodes again;
# a slurm.conf naming a socket nobody listens on is a node that cannot authenticate.
grep -q "^pass  munge .*credentials encode and decode ($CNET_MINICLUSTER_DIR/munge/munge.socket)" <<<"$out" || fail "munge finding: $out"
sed "s|^AuthInfo=socket=[^,]*|AuthInfo=socket=$work/no-munged.socket|" "$conf" >"$work/slurm.conf.nomunge"
rc=0
out=$("$CNET_BIN/cnet-doctor" --config "$work/doctor.conf" --slurm-conf "$work/slurm.conf.nomunge" --firewall-rules /dev/null --node cn2) || rc=$?
expect_eq "$rc" 1 "cnet-doctor's exit code without munged"
grep -q "^fail  munge .*munge -n: cannot reach munged's socket (exit 6) ($work/no-munged.socket)" <<<"$out" || fail "no munged: $out"

printf 'HealthCheckProgram=%s\nHealthCheckInterval=2\n' "$work/health-check" >>"$conf"
scontrol reconfigure
state() { sinfo -h -n "$1" -o '%T'; }
for ((i = 0; i < 100; i++)); do [[ $(state cn1) == drained ]] && break; sleep 0.2; done
expect_eq "$(state cn1)" drained "cn1 after failing its health check"
reason=$(sinfo -h -n cn1 -o '%E')
[[ $reason == "cnet-doctor: firewall: "*"blocks Slurm port $port"* ]] || fail "drain reason: $reason"
expect_eq "$(state cn2)" idle "cn2, which passes"
expect_eq "$(on_cluster srun -N1 hostname)" cn2 "where a job runs while cn1 is drained"

rm "$work/rules.cn1"
for ((i = 0; i < 100; i++)); do [[ $(state cn1) == idle ]] && break; sleep 0.2; done
expect_eq "$(state cn1)" idle "cn1 once healthy again"

# A drain someone else set is left alone.
scontrol update NodeName=cn2 State=DRAIN Reason="admin: fan"
sleep 5
expect_eq "$(sinfo -h -n cn2 -o '%E')" "admin: fan" "an admin's drain reason"
scontrol update NodeName=cn2 State=RESUME
echo ok
