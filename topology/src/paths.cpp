#include "cnet/topology/paths.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace cnet::topology {

const char* to_string(NicKind kind) {
  switch (kind) {
    case NicKind::ib: return "ib";
    case NicKind::roce: return "roce";
    case NicKind::eth: return "eth";
  }
  return "eth";
}

std::string PathClass::label() const {
  switch (level) {
    case PathLevel::self: return "X";
    case PathLevel::nvlink: return "NV" + std::to_string(nvlinks);
    case PathLevel::pix: return "PIX";
    case PathLevel::pxb: return "PXB";
    case PathLevel::phb: return "PHB";
    case PathLevel::node: return "NODE";
    case PathLevel::package: return "PKG";
    case PathLevel::sys: return "SYS";
  }
  return "SYS";
}

PathLevel pci_path_level(const Locality& a, const Locality& b) {
  std::size_t common = 0;
  while (common < a.pci_path.size() && common < b.pci_path.size() &&
         a.pci_path[common].id == b.pci_path[common].id)
    ++common;
  if (common == 0) {
    // Different root complexes: same NUMA node (NODE), same package (PKG), or across the SMP
    // interconnect between sockets (SYS).
    if (!a.nodeset.empty() && a.nodeset == b.nodeset) return PathLevel::node;
    return a.package >= 0 && a.package == b.package ? PathLevel::package : PathLevel::sys;
  }
  if (a.pci_path[common - 1].host_bridge) return PathLevel::phb;
  // Below a shared PCI bridge: one switch (each side at most one downstream port below it) is PIX,
  // a longer way through several switches without reaching the host bridge is PXB.
  std::size_t below_a = a.pci_path.size() - common, below_b = b.pci_path.size() - common;
  return below_a <= 1 && below_b <= 1 ? PathLevel::pix : PathLevel::pxb;
}

unsigned nvlinks_between(const Gpu& a, const Gpu& b) {
  unsigned direct = 0, a_to_switch = 0, b_to_switch = 0;
  for (const auto& l : a.nvlinks) {
    if (l.target == NvLink::Target::gpu && l.target_bus_id == b.pci.bus_id) direct += l.count;
    if (l.target == NvLink::Target::nvswitch) a_to_switch += l.count;
  }
  for (const auto& l : b.nvlinks)
    if (l.target == NvLink::Target::nvswitch) b_to_switch += l.count;
  return direct + std::min(a_to_switch, b_to_switch);
}

PathClass classify(const Gpu& a, const Gpu& b) {
  if (a.pci.bus_id == b.pci.bus_id) return {PathLevel::self, 0};
  if (unsigned n = nvlinks_between(a, b)) return {PathLevel::nvlink, n};
  return {pci_path_level(a.locality, b.locality), 0};
}

PathClass classify(const Gpu& gpu, const Nic& nic) { return {pci_path_level(gpu.locality, nic.locality), 0}; }

namespace {
// 0 known good, 1 unknown, 2 not usable.
int usability(const Nic& nic) {
  const std::string& s = nic.state;
  if (s == "ACTIVE" || s == "ACTIVE_DEFER" || s == "up") return 0;
  if (s.empty() || s == "unknown") return 1;
  return 2;
}
}  // namespace

bool usable(const Nic& nic) { return usability(nic) < 2; }

std::vector<GpuNicPair> pair_gpus_with_nics(const NodeTopology& topo) {
  bool any_rdma = std::any_of(topo.nics.begin(), topo.nics.end(), [](const Nic& n) { return n.is_rdma(); });
  std::map<int, unsigned> uses;
  std::vector<GpuNicPair> pairs;
  for (const auto& gpu : topo.gpus) {
    GpuNicPair best{gpu.index, -1, {}};
    std::tuple<int, int, unsigned, int, std::string> best_key;
    for (std::size_t i = 0; i < topo.nics.size(); ++i) {
      const Nic& nic = topo.nics[i];
      if ((any_rdma && !nic.is_rdma()) || !usable(nic)) continue;
      PathClass path = classify(gpu, nic);
      auto key = std::make_tuple(usability(nic), static_cast<int>(path.level), uses[static_cast<int>(i)],
                                 -static_cast<int>(nic.rate_gbps), nic.pci.bus_id);
      if (best.nic < 0 || key < best_key) {
        best = {gpu.index, static_cast<int>(i), path};
        best_key = key;
      }
    }
    if (best.nic >= 0) ++uses[best.nic];
    pairs.push_back(best);
  }
  return pairs;
}

}  // namespace cnet::topology
