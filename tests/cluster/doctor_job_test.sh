#!/usr/bin/env bash
# cnet-doctor --job across the minicluster: one row per node with its verdict and a UCX pair test to
# rank 0; a node failing a check, or slower than a saved baseline, is named and the exit code says so.
source "$(dirname "$0")/lib.sh"
work=$CNET_BUILD_DIR/test-work/doctor-job
rm -rf "$work" && mkdir -p "$work"
printf 'clock = off\nnics = off\nswap = off\nmemlock = off\n' >"$work/doctor.conf"
# Each node's firewall rules from rules.<node>, and its slurm.conf from slurm.conf.<node> when there is one.
doctor_job() {
  on_cluster srun --mpi=pmix --cnet-bind=none -N2 --ntasks-per-node=2 bash -c \
    'conf=(); [[ ! -f $2/slurm.conf.$(hostname) ]] || conf=(--slurm-conf "$2/slurm.conf.$(hostname)")
     exec "$0" --job --config "$1" --firewall-rules "$2/rules.$(hostname)" "${conf[@]}" "${@:3}"' \
    "$CNET_BIN/cnet-doctor" "$work/doctor.conf" "$work" "$@"
}

out=$(doctor_job --save-baseline "$work/baseline.json") || fail "a healthy job: $out"
echo "$out"
grep -Eq '^cn1 +(pass|warn) +\(rank 0\)' <<<"$out" || fail "no row for cn1"
grep -Eq '^cn2 +(pass|warn) +[0-9.]+ +[0-9.]+ *$' <<<"$out" || fail "cn2's row has no pair test or shows a problem"
/usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); r=b["reports"][0]; assert r["hosts"]==["cn1","cn2"] and r["results"][-1]["bandwidth_gbytes"] > 0' "$work/baseline.json" ||
  fail "baseline not saved in cnet-perf's baseline format"

port=$(sed -n 's/^SlurmdPort=//p' "$CNET_MINICLUSTER_DIR/etc/slurm.conf")
echo "-A INPUT -p tcp --dport $port -j REJECT" >"$work/rules.cn2"
rc=0
out=$(doctor_job) || rc=$?
expect_eq "$rc" 1 "exit code with a failing node"
grep -Eq "^cn2 +fail .*firewall: .*blocks Slurm port $port" <<<"$out" || fail "cn2's failure not shown: $out"
rm "$work/rules.cn2"

# The same baseline, 1000x faster than any link here: cn2's link is named as regressed.
/usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); [x.update(bandwidth_gbytes=x["bandwidth_gbytes"]*1000) for x in b["reports"][0]["results"]]; json.dump(b,open(sys.argv[2],"w"))' \
  "$work/baseline.json" "$work/fast.json"
rc=0
out=$(doctor_job --compare-baseline "$work/fast.json") || rc=$?
expect_eq "$rc" 1 "exit code when a link is slower than its baseline"
grep -q "^cn2 .*link to rank 0: 1 MiB: bandwidth .* GB/s vs .* GB/s in the baseline" <<<"$out" || fail "the slow link is not named: $out"

grep -q "NIC driver changed" <<<"$out" && fail "a driver change named though the drivers are the same: $out"

# Every pair, drawn: healthy, then against the 1000x baseline, where the pair is slow and both its
# nodes (two nodes: each is in its only pair) are behind it. The picture renders; --json has the matrix.
out=$(doctor_job --heatmap "$work/pairs.svg") || fail "a healthy job with --heatmap: $out"
rsvg-convert "$work/pairs.svg" -o "$work/pairs.png" || fail "the heatmap does not render"
grep -q 'class="pair"' "$work/pairs.svg" && ! grep -q 'class="pair slow"' "$work/pairs.svg" || fail "healthy pairs drawn wrong"
rc=0
doctor_job --heatmap "$work/slow.svg" --json --compare-baseline "$work/fast.json" >"$work/slow.json" || rc=$?
expect_eq "$rc" 1 "exit code with a slow pair"
/usr/bin/python3 - "$work/slow.json" <<'PY' || fail "--json has no matrix or misses the slow pair: $(cat "$work/slow.json")"
import json, sys
m = json.load(open(sys.argv[1]))["matrix"]
assert m["hosts"] == ["cn1", "cn2"] and m["gbytes"][0][1] > 0 and m["gbytes"][0][1] == m["gbytes"][1][0], m
assert m["slow_pairs"] == [["cn1", "cn2"]] and m["suspect_nodes"] == ["cn1", "cn2"], m
assert m["baseline_gbytes"][0][1] > m["gbytes"][0][1] > 0, m
PY
grep -q 'class="pair slow"' "$work/slow.svg" && grep -q "cn2 (suspect)" "$work/slow.svg" || fail "the slow pair is not marked in the heatmap"
out=$(on_cluster srun -N1 "$CNET_BIN/cnet-doctor" --job --heatmap "$work/pairs.png" 2>&1) && fail "--heatmap with a .png name accepted"
grep -q "the picture is SVG, name it FILE.svg" <<<"$out" || fail "no reason given: $out"

# The baseline recorded both nodes' NIC drivers; when the link regressed and a driver changed since,
# the change is named beside the regression.
/usr/bin/python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); d=b["reports"][0]["nic_drivers"]; assert set(d)=={"cn1","cn2"}, d; d["cn2"]="eth0 old_driver 0.9"; json.dump(b,open(sys.argv[2],"w"))' \
  "$work/fast.json" "$work/old-driver.json" || fail "the baseline does not record the nodes' NIC drivers: $(cat "$work/baseline.json")"
rc=0
out=$(doctor_job --compare-baseline "$work/old-driver.json") || rc=$?
expect_eq "$rc" 1 "exit code when a link regressed"
grep -q "^cn2 .*link to rank 0: .*NIC driver changed since the baseline: cn2: eth0 old_driver 0.9 -> " <<<"$out" || fail "the driver change is not named: $out"

# cn2's munged with a key of its own: its credentials decode there but not on cn1 (nor on slurmctld).
munge2=$work/munge2
mkdir -p "$munge2" && chmod 700 "$munge2"
dd if=/dev/urandom of="$munge2/key" bs=1024 count=1 status=none && chmod 400 "$munge2/key"
munged -F --force --socket="$munge2/socket" --key-file="$munge2/key" --pid-file="$munge2/pid" --seed-file="$munge2/seed" \
  --log-file="$munge2/log" </dev/null >/dev/null 2>&1 &
munged2=$!
trap 'kill "$munged2" 2>/dev/null || true' EXIT
for ((i = 0; i < 50; i++)); do [[ -S $munge2/socket ]] && break; sleep 0.1; done
sed "s|^AuthInfo=socket=[^,]*|AuthInfo=socket=$munge2/socket|" "$CNET_MINICLUSTER_DIR/etc/slurm.conf" >"$work/slurm.conf.cn2"
rc=0
out=$(doctor_job) || rc=$?
expect_eq "$rc" 1 "exit code when a node's munge key differs"
grep -q "^cn2 .*munge: a credential made here does not decode on cn1 (unmunge: " <<<"$out" || fail "the other key is not named: $out"
grep -q "^cn1 .*munge" <<<"$out" && fail "cn1's own credential was flagged: $out"
echo ok
