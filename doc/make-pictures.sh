#!/usr/bin/env bash
# The guides' pictures, made from the test fixtures (and a 4-rank link matrix on this machine) with the
# built tools, never drawn by hand:
#   bash doc/make-pictures.sh [BUILD_DIR]      -> doc/pictures/*.svg
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$repo/build}/bin
out=$repo/doc/pictures
fixtures=$repo/tests/fixtures/hwloc
mkdir -p "$out"
"$bin/cnet-topo" --hwloc-xml "$fixtures/nvidiaDGX2.xml" --no-nvml --format svg -o "$out/dgx2-topology.svg"
# A node with NICs, one port DOWN: how cnet-topo marks what a job cannot use.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed 's/name="Port1State" value="4"/name="Port1State" value="1"/' "$fixtures/32em64t-2n8c2t-pci-wholeio.xml" >"$tmp"
"$bin/cnet-topo" --hwloc-xml "$tmp" --no-nvml --hostname node-with-a-down-port --format svg -o "$out/down-port-topology.svg"
# Every pair of four ranks on this machine, as cnet-perf matrix draws a job's nodes (exit 1: it found a
# slow pair, which ranks sharing a small machine's cores often are; the picture is drawn all the same).
"$bin/cnet-perf" --local 4 matrix --tolerance 0.3 --heatmap "$out/pairs-heatmap.svg" >/dev/null || (($? == 1))
ls -l "$out"
