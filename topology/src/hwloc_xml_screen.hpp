#pragma once
// Checks an hwloc XML export before hwloc loads it in this process: hwloc 2.9 trusts an export's
// structure, and a damaged one can crash, stall or bloat whoever reads it (cnet-topo, slurmd).
#include <filesystem>

namespace cnet::topology {

// Throws TopologyError naming what is wrong with the file and how to regenerate it; returns when hwloc
// can load it safely.
void screen_hwloc_xml(const std::filesystem::path& path);

}  // namespace cnet::topology
