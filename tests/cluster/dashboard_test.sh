#!/usr/bin/env bash
# The Grafana dashboard and the alert rules name only metrics cnet's tools really write: cnet-pool (here,
# against the minicluster, while a job holds GPUs), cnet-doctor and cnet-perf write their textfiles, and
# every panel query and alert expression is checked against the metric names in them. The pool's
# gauges carry what cnet-pool --json says.
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/cnet-dashboard-XXXXXX)
chmod 755 "$work"
trap 'on_cluster scancel --name=cnet-dashboard-hold >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

job=$(cd "$work" && on_cluster sbatch --parsable --job-name=cnet-dashboard-hold -w cn1 --gres=gpu:1 --wrap 'sleep 120')
for _ in $(seq 50); do [[ $(on_cluster squeue -h -j "$job" -o %t) == R ]] && break; sleep 0.2; done
on_cluster "$CNET_BIN/cnet-pool" --json --prometheus "$work/cnet_pool.prom" >"$work/pool.json" || fail "cnet-pool --prometheus"
promtool check metrics <"$work/cnet_pool.prom" || fail "promtool rejects cnet-pool's textfile"
rc=0
"$CNET_BIN/cnet-doctor" --nodes localhost --prometheus "$work/cnet_doctor.prom" >/dev/null 2>&1 || rc=$?
((rc <= 1)) || fail "cnet-doctor exited $rc"
"$CNET_BIN/cnet-perf" p2p --local 2 --max-size 65536 --prometheus "$work/cnet_perf.prom" >/dev/null 2>&1 || fail "cnet-perf p2p"
"$CNET_BIN/cnet-perf" allreduce --local 2 --max-size 65536 --prometheus "$work/cnet_allreduce.prom" >/dev/null 2>&1 || fail "cnet-perf allreduce"

python3 - "$work" "$repo/contrib/grafana/cnet-dashboard.json" "$repo/contrib/prometheus/cnet-alerts.yml" <<'PY' || fail "the dashboard or alerts name a metric no tool writes"
import glob, json, re, sys
work, dashboard, alerts = sys.argv[1:]
text = "".join(open(f).read() for f in glob.glob(work + "/*.prom"))
exported = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
named = lambda expr: set(re.findall(r"\bcnet_[a-z0-9_]+", expr))

# The pool's gauges say what cnet-pool --json says.
pool = {n["node"]: n for n in json.load(open(work + "/pool.json"))}
def gauge(name, node):
    m = re.search(r'^%s\{node="%s"\} (\S+)$' % (name, node), text, re.M)
    assert m, "%s for %s missing" % (name, node)
    return float(m.group(1))
assert gauge("cnet_pool_gpus_used", "cn1") == pool["cn1"]["gpus_used"] == 1, pool["cn1"]
assert gauge("cnet_pool_gpus", "cn1") == pool["cn1"]["gpus_total"]
assert re.search(r'^cnet_pool_node_state\{.*node="cn1".*state="%s"\} 1$' % re.escape(pool["cn1"]["state"]), text, re.M)

panels = [p for p in json.load(open(dashboard))["panels"] if p["type"] != "row"]
assert panels, "no panels"
for p in panels:
    assert p.get("targets"), "panel %r has no query" % p["title"]
    for t in p["targets"]:
        names = named(t["expr"])
        assert names, "panel %r: query %r names no cnet metric" % (p["title"], t["expr"])
        assert names <= exported, "panel %r: %s not written by any tool" % (p["title"], sorted(names - exported))
shown = set().union(*(named(t["expr"]) for p in panels for t in p["targets"]))
for family in ("cnet_pool_", "cnet_doctor_", "cnet_perf_"):
    assert any(n.startswith(family) for n in shown), "no panel for " + family
for expr in re.findall(r"^\s+expr: (.+)$", open(alerts).read(), re.M):
    assert named(expr) <= exported, "alert %r: %s not written by any tool" % (expr, sorted(named(expr) - exported))
print("dashboard: %d panels, %d metrics shown, all written by cnet's tools" % (len(panels), len(shown)))
PY
promtool check rules "$repo/contrib/prometheus/cnet-alerts.yml" >/dev/null || fail "the alert rules do not load"

out=$(on_cluster "$CNET_BIN/cnet-pool" --prometheus "$work/pool.txt" 2>&1) && fail "a .txt textfile was accepted"
[[ $out == *"must end in .prom"* ]] || fail "no reason given: $out"
echo ok
