#!/usr/bin/env bash
# cnet-doctor and cnet-perf write node_exporter textfiles that Prometheus's own linter accepts, with the
# values the tools printed; the example alert rules load; a bad --prometheus is refused before any work.
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rc=0
"$CNET_BIN/cnet-doctor" --json --nodes localhost --prometheus "$work/cnet_doctor.prom" >"$work/doctor.json" || rc=$?
((rc <= 1)) || fail "cnet-doctor exited $rc"
promtool check metrics <"$work/cnet_doctor.prom" || fail "promtool rejects cnet-doctor's textfile"
# Every check the JSON reports (skips aside) has its verdict in the textfile.
python3 - "$work/doctor.json" "$work/cnet_doctor.prom" <<'PY'
import json, re, sys
report = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
code = {"pass": 0, "warn": 1, "fail": 2}
for c in report["checks"]:
    if c["status"] == "skip":
        continue
    line = 'cnet_doctor_check_status{check="%s",node="%s"} %d\n' % (c["check"], report["host"], code[c["status"]])
    assert line in text, "missing: " + line
failed = sum(c["status"] == "fail" for c in report["checks"])
assert 'cnet_doctor_failed_checks{node="%s"} %d\n' % (report["host"], failed) in text
PY

"$CNET_BIN/cnet-perf" p2p --local 2 --max-size 65536 --json --prometheus "$work/cnet_perf.prom" >"$work/perf.json" || fail "cnet-perf"
promtool check metrics <"$work/cnet_perf.prom" || fail "promtool rejects cnet-perf's textfile"
python3 - "$work/perf.json" "$work/cnet_perf.prom" <<'PY'
import json, re, sys
report = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
def value(name, **labels):
    sel = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    m = re.search(re.escape(name + "{" + sel + "} ") + r"(\S+)\n", text)
    assert m, "missing %s{%s}" % (name, sel)
    return float(m.group(1))
hosts = ",".join(report["hosts"])
last = report["results"][-1]
assert abs(value("cnet_perf_link_bandwidth_bytes_per_second", hosts=hosts, mode="p2p") - last["bandwidth_gbytes"] * 1e9) < 1
first = report["results"][0]
assert abs(value("cnet_perf_link_latency_p99_seconds", hosts=hosts, mode="p2p") - first["latency_p99_us"] * 1e-6) < 1e-12
assert value("cnet_perf_regressions", hosts=hosts, mode="p2p") == -1
PY

promtool check rules "$repo/contrib/prometheus/cnet-alerts.yml" >/dev/null || fail "the example alert rules do not load"

out=$("$CNET_BIN/cnet-perf" p2p --local 2 --prometheus "$work/cnet_perf.txt" 2>&1) && fail "a .txt textfile was accepted"
[[ $out == *"must end in .prom"* ]] || fail "no reason given: $out"
out=$("$CNET_BIN/cnet-doctor" --prometheus "$work/missing/cnet_doctor.prom" 2>&1) && fail "a missing folder was accepted"
[[ $out == *"folder $work/missing does not exist"* ]] || fail "no reason given: $out"
echo ok
