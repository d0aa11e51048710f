#!/usr/bin/python3
"""Checks cnet-topo on every real-machine fixture against facts derived with hwloc's own tools.

usage: fixture_facts_test.py CNET_TOPO FIXTURES_DIR
For each hwloc XML export: the GPUs lstopo lists, each device's cores and NUMA node as hwloc-calc
computes them, the RDMA devices lstopo lists, and that gres.conf and the NCCL XML say the same.
"""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

cnet_topo, fixtures = sys.argv[1], Path(sys.argv[2])
failures = []


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def ranges_to_set(text):
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cpumap_to_set(mask):
    """As NCCL reads an affinity: 32-bit hex words, the last one CPUs 0-31."""
    value = 0
    for word in mask.split(","):
        value = value << 32 | int(word, 16)
    return {i for i in range(value.bit_length()) if value >> i & 1}


def calc(xml, *args):
    return run("hwloc-calc", "--input", str(xml), *args).strip()


for xml in sorted((fixtures / "hwloc").glob("*.xml")):
    name = xml.name
    topo = json.loads(run(cnet_topo, "--hwloc-xml", str(xml), "--format", "json"))
    pcidevs = re.findall(r"busid=(\S+) id=([0-9a-f]{4}):[0-9a-f]{4} class=([0-9a-f]{4})",
                         run("lstopo-no-graphics", "--input", str(xml), "-v", "--only", "pcidev"))
    want_gpus = sorted(b for b, vendor, cls in pcidevs
                       if (vendor == "10de" and cls.startswith("03")) or (vendor == "1002" and cls in ("0302", "0380", "1200")))
    got_gpus = [g["pci"]["bus_id"] for g in topo["gpus"]]
    expect(got_gpus == want_gpus, f"{name}: GPUs {got_gpus} != lstopo's {want_gpus}")

    osdevs = run("lstopo-no-graphics", "--input", str(xml), "--only", "osdev")
    rdma = sorted(re.findall(r'OpenFabrics[^"]*"([^"]+)"', osdevs))
    got_rdma = sorted(n["rdma_device"] for n in topo["nics"] if n["rdma_device"])
    expect(got_rdma == rdma, f"{name}: RDMA devices {got_rdma} != lstopo's {rdma}")

    bus_ids = [b for b, _, _ in pcidevs]
    for dev in topo["gpus"] + topo["nics"]:
        bus, loc = dev["pci"]["bus_id"], dev["locality"]
        if bus_ids.count(bus) > 1:  # hwloc's test exports reuse a bus id; hwloc-calc pci= takes the first
            print(f"{name} {bus}: bus id not unique in this export, locality not cross-checked")
            continue
        cores = ranges_to_set(calc(xml, f"pci={bus}", "--intersect", "core"))
        expect(ranges_to_set(loc["cores"]) == cores, f"{name} {bus}: cores {loc['cores']} != hwloc-calc {sorted(cores)}")
        numas = calc(xml, f"pci={bus}", "--po", "--intersect", "NUMAnode").split(",")
        want_numa = int(numas[0]) if len(numas) == 1 and numas[0] else -1
        expect(loc["numa_node"] == want_numa, f"{name} {bus}: NUMA {loc['numa_node']} != hwloc-calc {numas}")

    gres = run(cnet_topo, "--hwloc-xml", str(xml), "--format", "gres")
    gpu_lines = [l for l in gres.splitlines() if " Name=gpu " in f" {l}"]
    expect(len(gpu_lines) == len(want_gpus), f"{name}: {len(gpu_lines)} gres gpu lines for {len(want_gpus)} GPUs")
    for line, g in zip(gpu_lines, topo["gpus"]):
        m = re.search(r"Cores=(\S+)", line)
        want = calc(xml, f"pci={g['pci']['bus_id']}", "--intersect", "core")
        expect(m and ranges_to_set(m.group(1)) == ranges_to_set(want), f"{name}: gres '{line}' Cores != {want}")
        links = re.search(r"Links=(\S+)", line)
        nvlinks_known = all(gpu["nvlinks"] is not None for gpu in topo["gpus"])
        if len(gpu_lines) > 1 and nvlinks_known:
            expect(links and links.group(1).split(",").count("-1") == 1, f"{name}: '{line}' needs exactly one -1 in Links")
        else:
            expect(not links, f"{name}: '{line}' states Links without NVLink data")

    nccl = ET.fromstring(run(cnet_topo, "--hwloc-xml", str(xml), "--format", "nccl"))
    expect(nccl.tag == "system" and nccl.get("version") == "1", f"{name}: NCCL root is not <system version=1>")
    for cpu in nccl.findall("cpu"):
        numa = int(cpu.get("numaid"))
        aff = cpu.get("affinity", "")
        expect(re.fullmatch(r"[0-9a-f]{1,8}(,[0-9a-f]{1,8})*", aff) is not None and len(aff) <= 255,
               f"{name}: affinity '{aff}' not a cpumap NCCL reads")
        if numa >= 0:
            pus = ranges_to_set(calc(xml, "--physical-input", f"NUMAnode:{numa}", "--po", "--intersect", "PU"))
            expect(cpumap_to_set(aff) == pus, f"{name}: cpu {numa} affinity {aff} != PUs {sorted(pus)}")
        for pci in cpu.iter("pci"):
            for attr in ("busid", "class", "link_speed", "link_width"):
                expect(pci.get(attr), f"{name}: <pci> without {attr}")
            expect(pci.get("busid") == pci.get("busid").lower(), f"{name}: upper-case busid {pci.get('busid')}")
            if pci.find("gpu") is not None:
                gpu = next(g for g in topo["gpus"] if g["pci"]["bus_id"] == pci.get("busid"))
                expect(gpu["locality"]["numa_node"] in (numa, -1), f"{name}: GPU {pci.get('busid')} under cpu {numa}")
    nccl_gpus = sorted(p.get("busid") for p in nccl.iter("pci") if p.find("gpu") is not None)
    expect(nccl_gpus == want_gpus, f"{name}: NCCL XML GPUs {nccl_gpus} != {want_gpus}")
    print(f"{name}: {len(want_gpus)} GPUs, {len(topo['nics'])} NICs checked")

print(f"{len(failures)} failed" if failures else "all fixture facts hold")
sys.exit(1 if failures else 0)
