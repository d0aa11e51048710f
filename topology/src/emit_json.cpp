#include <nlohmann/json.hpp>

#include "cnet/topology/emit.hpp"
#include "cnet/topology/paths.hpp"

namespace cnet::topology {
namespace {
using nlohmann::json;

json locality_json(const Locality& l) {
  json path = json::array();
  for (const auto& hop : l.pci_path) path.push_back(hop.host_bridge ? "hostbridge" : hop.bus_id);
  return {{"numa_node", l.numa_node}, {"cpuset", l.cpuset}, {"cores", compress_ranges(l.cores)}, {"pci_path", path}};
}

json pci_json(const PciIdentity& p) {
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x:%04x", p.vendor_id, p.device_id);
  char cls[8];
  std::snprintf(cls, sizeof cls, "%04x", p.class_id);
  return {{"bus_id", p.bus_id}, {"class", cls}, {"id", ids}, {"link_gbytes_per_s", p.link_gbytes_per_s}};
}

}  // namespace

std::string to_json(const NodeTopology& topo) {
  json j;
  j["schema"] = kJsonSchema;
  j["host"] = topo.hostname;
  j["cpu"] = {{"arch", topo.cpu.arch}, {"vendor", topo.cpu.vendor}, {"model", topo.cpu.model_name},
              {"packages", topo.packages}, {"cores", topo.cores}, {"pus", topo.pus}};
  j["numa_nodes"] = json::array();
  for (const auto& n : topo.numa_nodes)
    j["numa_nodes"].push_back({{"os_index", n.os_index}, {"cpuset", n.cpuset}, {"memory_bytes", n.memory_bytes}});
  j["gpus"] = json::array();
  for (const auto& g : topo.gpus) {
    json links = json::array();
    for (const auto& l : g.nvlinks)
      links.push_back({{"target", l.target_bus_id},
                       {"kind", l.target == NvLink::Target::gpu ? "gpu" : l.target == NvLink::Target::nvswitch ? "nvswitch" : "cpu"},
                       {"count", l.count}});
    j["gpus"].push_back({{"index", g.index}, {"minor", g.minor}, {"vendor", g.vendor}, {"model", g.model},
                         {"gres_type", gres_type(g.model)}, {"memory_bytes", g.memory_bytes},
                         {"pci", pci_json(g.pci)}, {"locality", locality_json(g.locality)}, {"nvlinks", links}});
  }
  j["nics"] = json::array();
  for (const auto& n : topo.nics)
    j["nics"].push_back({{"name", n.name}, {"kind", to_string(n.kind)}, {"netdev", n.netdev},
                         {"rdma_device", n.rdma_device}, {"port", n.port}, {"state", n.state},
                         {"rate_gbps", n.rate_gbps}, {"lanes", n.lanes}, {"mtu", n.mtu}, {"guid", n.guid},
                         {"pci", pci_json(n.pci)}, {"locality", locality_json(n.locality)}});
  json gpu_gpu = json::array(), gpu_nic = json::array();
  for (const auto& a : topo.gpus) {
    json row = json::array(), nic_row = json::array();
    for (const auto& b : topo.gpus) row.push_back(classify(a, b).label());
    for (const auto& n : topo.nics) nic_row.push_back(classify(a, n).label());
    gpu_gpu.push_back(row);
    gpu_nic.push_back(nic_row);
  }
  j["paths"] = {{"gpu_gpu", gpu_gpu}, {"gpu_nic", gpu_nic}};
  j["pairing"] = json::array();
  for (const auto& p : pair_gpus_with_nics(topo))
    j["pairing"].push_back({{"gpu", p.gpu}, {"nic", p.nic >= 0 ? json(topo.nics[p.nic].name) : json(nullptr)},
                            {"path", p.nic >= 0 ? json(p.path.label()) : json(nullptr)}});
  j["notes"] = topo.notes;
  return j.dump(2) + "\n";
}

}  // namespace cnet::topology
