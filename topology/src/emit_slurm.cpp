#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "cnet/common/text.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/features.hpp"

namespace cnet::topology {
namespace {

// gres.conf Cores=: the whole package (socket) a device hangs off. Slurm 23.02 and later set a node
// INVAL when a range covers part of a socket, as NUMA-node ranges do on NPS2/NPS4 and SNC machines.
const std::vector<unsigned>& gres_cores(const Locality& l) { return l.package_cores.empty() ? l.cores : l.package_cores; }

std::string node_prefix(const NodeTopology& topo) { return topo.hostname.empty() ? "" : "NodeName=" + topo.hostname + " "; }

// RDMA devices are numbered /dev/infiniband/uverbsN in name order on a node without renames.
std::vector<const Nic*> rdma_nics(const NodeTopology& topo) {
  std::vector<const Nic*> out;
  for (const auto& n : topo.nics)
    if (n.is_rdma()) out.push_back(&n);
  std::sort(out.begin(), out.end(), [](const Nic* a, const Nic* b) { return a->rdma_device < b->rdma_device; });
  return out;
}

// The fabric a node offers jobs: its RDMA NICs if it has any, else its Ethernet.
std::set<std::string> fabric_features(const NodeTopology& topo) {
  std::set<std::string> out;
  bool any_rdma = !rdma_nics(topo).empty();
  for (const auto& n : topo.nics)
    if (!any_rdma || n.is_rdma()) out.insert(fabric_feature(n));
  return out;
}

}  // namespace

std::string to_gres_conf(const NodeTopology& topo) {
  std::ostringstream out;
  out << "# gres.conf for " << (topo.hostname.empty() ? "this node" : topo.hostname) << ", written by cnet-topo\n";
  bool nvlinks_known = std::all_of(topo.gpus.begin(), topo.gpus.end(), [](const Gpu& g) { return g.nvlinks_known; });
  for (const auto& g : topo.gpus) {
    out << node_prefix(topo) << "Name=gpu Type=" << gres_type(g.model) << " File=/dev/nvidia" << g.minor;
    if (!gres_cores(g.locality).empty()) out << " Cores=" << common::compress_ranges(gres_cores(g.locality));
    if (topo.gpus.size() > 1 && nvlinks_known) {
      // Slurm's Links: entry i is the number of direct links to GPU i (bus id order), -1 for itself.
      // Written only when every GPU's NVLinks are known: a 0 would state "no NVLink".
      out << " Links=";
      for (const auto& peer : topo.gpus) {
        if (&peer != &topo.gpus.front()) out << ',';
        if (&peer == &g) { out << "-1"; continue; }
        unsigned direct = 0;
        for (const auto& l : g.nvlinks)
          if (l.target == NvLink::Target::gpu && l.target_bus_id == peer.pci.bus_id) direct += l.count;
        out << direct;
      }
    }
    out << '\n';
  }
  auto rdma = rdma_nics(topo);
  for (std::size_t i = 0; i < rdma.size(); ++i) {
    // The device's own uverbs node; without sysfs (an hwloc export alone) the n-th is the best guess.
    std::string verbs = rdma[i]->verbs_device.empty() ? "uverbs" + std::to_string(i) : rdma[i]->verbs_device;
    out << node_prefix(topo) << "Name=rdma Type=" << rdma[i]->rdma_device << " File=/dev/infiniband/" << verbs;
    if (!gres_cores(rdma[i]->locality).empty()) out << " Cores=" << common::compress_ranges(gres_cores(rdma[i]->locality));
    out << '\n';
  }
  return out.str();
}

std::string to_node_features(const NodeTopology& topo) {
  std::set<std::string> features;
  std::map<std::string, unsigned> gpu_types;
  bool nvlink = false;
  for (const auto& g : topo.gpus) {
    ++gpu_types[gres_type(g.model)];
    features.insert(gres_type(g.model));
    if (auto mem = memory_class(g.memory_bytes); !mem.empty()) features.insert(mem);
    nvlink = nvlink || !g.nvlinks.empty();
  }
  if (nvlink) features.insert("nvlink");
  for (const auto& f : fabric_features(topo)) features.insert(f);

  std::ostringstream out;
  out << "NodeName=" << (topo.hostname.empty() ? "NODE" : topo.hostname);
  std::vector<std::string> gres;
  for (const auto& [type, count] : gpu_types) gres.push_back("gpu:" + type + ":" + std::to_string(count));
  // Typed like the gres.conf lines (Type=<rdma device>): Slurm drops gres.conf types slurm.conf lacks,
  // and gres/rdma names each allocated NIC by its type.
  for (const Nic* n : rdma_nics(topo)) gres.push_back("rdma:" + n->rdma_device + ":1");
  if (!gres.empty()) out << " Gres=" << common::join(gres, ",");
  if (!features.empty()) out << " Features=" << common::join({features.begin(), features.end()}, ",");
  out << '\n';
  return out.str();
}

}  // namespace cnet::topology
