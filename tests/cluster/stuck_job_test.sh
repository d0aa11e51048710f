#!/usr/bin/env bash
# A job stuck COMPLETING (here an epilog that waits while a hold file exists, as a hung one would):
# cnet-pool names the job on the node it holds, cnet-doctor --health-check on that node drains it with
# the job in the reason, and resumes it once the job is gone.
source "$(dirname "$0")/lib.sh"
eval "$("$CNET_MINICLUSTER" env)"
work=$CNET_BUILD_DIR/test-work/stuck
rm -rf "$work" && mkdir -p "$work"
conf=$SLURM_CONF
cp "$conf" "$work/slurm.conf.orig"
restore() {
  rm -f "$work/hold.cn2"
  cp "$work/slurm.conf.orig" "$conf"
  scontrol reconfigure
  scontrol update NodeName=cn2 State=RESUME 2>/dev/null || true
}
trap restore EXIT

cat >"$work/epilog" <<SH
#!/bin/sh
i=0
while [ -e "$work/hold.\$SLURMD_NODENAME" ] && [ \$i -lt 600 ]; do sleep 0.2; i=\$((i + 1)); done
exit 0
SH
chmod +x "$work/epilog"
echo "Epilog=$work/epilog" >>"$conf"
scontrol reconfigure
printf 'clock = off\nswap = off\nnics = off\nmemlock = off\nlimits = off\nsysctl = off\nfirewall = off\ndns = off\nstuck.after_s = 2\n' >"$work/doctor.conf"
health_check() { "$CNET_BIN/cnet-doctor" --health-check --config "$work/doctor.conf" --slurm-conf "$conf" --node cn2; }

touch "$work/hold.cn2"
job=$(sbatch --parsable -w cn2 -o /dev/null --wrap true)
state() { squeue -h -j "$job" -o %T 2>/dev/null; }
for ((i = 0; i < 100; i++)); do [[ $(state) == COMPLETING ]] && break; sleep 0.2; done
expect_eq "$(state)" COMPLETING "job $job while its epilog hangs"
sleep 3

out=$("$CNET_BIN/cnet-pool" --stuck-after 2) || fail "cnet-pool: $out"
echo "$out"
grep -Eq "^cn2 +[a-z]+\+comp .*stuck: job $job \(root\) completing for [0-9]+ s$" <<<"$out" || fail "cn2's stuck job not shown: $out"
grep -q "1 node held by stuck jobs" <<<"$out" || fail "no count of held nodes: $out"
grep -E "^cn1 " <<<"$out" | grep -q stuck && fail "cn1 shown as stuck: $out"
"$CNET_BIN/cnet-pool" --json --stuck-after 2 | /usr/bin/python3 -c 'import json,sys; r={n["node"]:n for n in json.load(sys.stdin)}; assert r["cn2"]["stuck"] and not r["cn1"]["stuck"], r' ||
  fail "cnet-pool --json has no stuck list"
"$CNET_BIN/cnet-pool" --json | /usr/bin/python3 -c 'import json,sys; assert not any(n["stuck"] for n in json.load(sys.stdin))' ||
  fail "a job completing for seconds counted as stuck at the 600 s default"

health_check
reason=$(sinfo -h -n cn2 -o '%E')
[[ $reason == "cnet-doctor: stuck job: job $job (root) completing for "* ]] || fail "drain reason: $reason"
[[ $(sinfo -h -n cn2 -o '%T') == drain* ]] || fail "cn2 not drained: $(sinfo -h -n cn2 -o '%T')"

rm "$work/hold.cn2"
for ((i = 0; i < 100; i++)); do [[ -z $(state) ]] && break; sleep 0.2; done
expect_eq "$(state)" "" "job $job once its epilog ends"
health_check
# (slurmctld may show it not responding for a moment after its epilog: wait for the next ping)
for ((i = 0; i < 100; i++)); do [[ $(sinfo -h -n cn2 -o '%T') == idle ]] && break; sleep 0.2; done
expect_eq "$(sinfo -h -n cn2 -o '%T')" idle "cn2 once the stuck job is gone"
echo ok
