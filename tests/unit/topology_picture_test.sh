#!/usr/bin/env bash
# cnet-topo --format svg draws real fixtures (a DGX-2, a 4-package node, a node with NICs) through
# Graphviz; each picture is valid SVG that rsvg-convert renders, shows every GPU and NIC discovery
# found, and marks a DOWN port. --format dot is what Graphviz's own dot reads.
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fixtures=$repo/tests/fixtures/hwloc

picture() {  # picture NAME XML: the SVG, rendered, checked against the JSON's devices
  "$CNET_BIN/cnet-topo" --hwloc-xml "$2" --no-nvml --format svg -o "$work/$1.svg" 2>/dev/null || fail "$1: cnet-topo --format svg"
  "$CNET_BIN/cnet-topo" --hwloc-xml "$2" --no-nvml --format json -o "$work/$1.json" 2>/dev/null || fail "$1: cnet-topo --format json"
  rsvg-convert "$work/$1.svg" -o "$work/$1.png" || fail "$1: rsvg-convert cannot render the SVG"
  python3 - "$work/$1.svg" "$work/$1.json" <<'PY' || fail "$1: the picture is missing a device"
import json, sys, xml.etree.ElementTree as ET
svg = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text")]
topo = json.load(open(sys.argv[2]))
for g in topo["gpus"]:
    assert "GPU%d" % g["index"] in texts, "GPU%d" % g["index"]
for n in topo["nics"]:
    assert any(t.startswith(n["name"]) for t in texts), n["name"]
print("%s: %d GPUs, %d NICs drawn" % (sys.argv[1].rsplit("/", 1)[-1], len(topo["gpus"]), len(topo["nics"])))
PY
}
picture dgx2 "$fixtures/nvidiaDGX2.xml"
picture four_packages "$fixtures/96em64t-4n4d3ca2co-pci.xml"
picture nics "$fixtures/32em64t-2n8c2t-pci-wholeio.xml"
# A GPU and its NIC on one rank once made Graphviz 2.42 free memory twice (a labelled flat edge), now and
# then: drawn a few more times, each must succeed.
for i in 1 2 3 4 5; do picture "nics$i" "$fixtures/32em64t-2n8c2t-pci-wholeio.xml" >/dev/null; done

# A port that went DOWN is drawn red and says so.
sed 's/name="Port1State" value="4"/name="Port1State" value="1"/' "$fixtures/32em64t-2n8c2t-pci-wholeio.xml" >"$work/down.xml"
picture down "$work/down.xml"
grep -q "DOWN (not usable)" "$work/down.svg" || fail "the DOWN port is not marked"
grep -q 'fill="#f4c7c3"' "$work/down.svg" || fail "the DOWN port is not drawn red"
! grep -q "not usable" "$work/nics.svg" || fail "an ACTIVE port is marked"

"$CNET_BIN/cnet-topo" --hwloc-xml "$fixtures/nvidiaDGX2.xml" --no-nvml --format dot -o "$work/dgx2.dot" 2>/dev/null
dot -Tsvg "$work/dgx2.dot" -o "$work/dgx2-dot.svg" || fail "Graphviz's dot does not read --format dot"
echo ok
