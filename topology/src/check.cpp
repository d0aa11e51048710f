#include "cnet/topology/check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cnet/common/text.hpp"
#include "cnet/topology/paths.hpp"

namespace cnet::topology {

const char* to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::link_fault: return "link_fault";
    case FindingKind::placement: return "placement";
    case FindingKind::unknown: return "unknown";
  }
  return "unknown";
}

namespace {

bool in_fabric(const Nic& n, const CheckOptions& o) {
  if (!o.fabric.empty()) return o.fabric.selects(n);
  return o.tcp_fabric ? !n.is_rdma() && !n.netdev.empty() : n.is_rdma();
}

}  // namespace

std::vector<Finding> check_links(const NodeTopology& topo, const CheckOptions& options) {
  std::vector<Finding> findings;
  for (const auto& n : topo.nics) {
    if (!n.rdma_device.empty() && !n.state.empty() && n.state != "ACTIVE")
      findings.push_back({n.name, "RDMA port " + std::to_string(n.port) + " is " + n.state + ", not ACTIVE",
                          "check the cable and that a subnet manager (opensm/UFM) sees the port: ibstat " + n.rdma_device,
                          FindingKind::link_fault, "state"});
    if (n.kind == NicKind::ib && n.lanes && n.lanes < options.expected_ib_lanes)
      findings.push_back({n.name,
                          "link trained at " + std::to_string(n.lanes) + "X (" + std::to_string(n.rate_gbps) +
                              " Gb/s) instead of " + std::to_string(options.expected_ib_lanes) + "X",
                          "reseat or replace the cable; check the switch port with ibportstate", FindingKind::link_fault, "width"});
    if (options.min_rate_gbps && in_fabric(n, options) && !n.rate_gbps)
      findings.push_back({n.name, "rate unknown: not checked against " + std::to_string(options.min_rate_gbps) + " Gb/s",
                          "run cnet-topo check on the node itself, or give it the node's /sys with --sysfs-root",
                          FindingKind::unknown, "rate"});
    if (options.min_rate_gbps && in_fabric(n, options) && n.rate_gbps && n.rate_gbps < options.min_rate_gbps)
      findings.push_back({n.name,
                          "negotiated " + std::to_string(n.rate_gbps) + " Gb/s, below the expected " +
                              std::to_string(options.min_rate_gbps) + " Gb/s",
                          "check the cable, the switch port speed and the NIC firmware", FindingKind::link_fault, "rate"});
  }

  // NICs of one fabric must agree on MTU, or large messages stall or fragment between nodes.
  std::map<NicKind, std::vector<std::pair<std::string, unsigned>>> mtus;  // in NIC (bus id) order
  for (const auto& n : topo.nics)
    if (n.mtu && in_fabric(n, options)) mtus[n.kind].emplace_back(n.netdev.empty() ? n.name : n.netdev, n.mtu);
  for (const auto& [kind, nics] : mtus) {
    std::set<unsigned> distinct;
    std::string seen;
    for (const auto& [name, mtu] : nics) {
      distinct.insert(mtu);
      seen += (seen.empty() ? "" : ", ") + name + "=" + std::to_string(mtu);
    }
    if (distinct.size() > 1)
      findings.push_back({to_string(kind), "MTU differs between NICs of the same fabric: " + seen,
                          "set one MTU on all of them (ip link set DEV mtu N) and on the switches", FindingKind::link_fault, "mtu"});
  }

  if (!topo.nics.empty()) {
    bool any_rdma = std::any_of(topo.nics.begin(), topo.nics.end(), [](const Nic& n) { return n.is_rdma(); });
    for (const auto& p : pair_gpus_with_nics(topo)) {
      const Gpu& g = topo.gpus[p.gpu];
      std::string gpu = "GPU" + std::to_string(g.index);
      if (p.nic < 0) {
        std::vector<std::string> seen;
        for (const auto& n : topo.nics)
          if (!any_rdma || n.is_rdma()) seen.push_back(n.name + " (" + (n.state.empty() ? "state unknown" : n.state) + ")");
        findings.push_back({gpu, "no usable NIC for " + gpu + " (" + g.pci.bus_id + "): " + common::join(seen, ", "),
                            "bring a port up (ibstat; check the cable and that the subnet manager sees it); jobs on this GPU get no NIC binding until then",
                            FindingKind::link_fault, "pairing"});
      } else if (p.path.level == PathLevel::sys) {
        findings.push_back({gpu,
                            "no usable NIC on the package (socket) of " + gpu + " (" + g.pci.bus_id + "): its network traffic crosses "
                                "the CPU interconnect to " + topo.nics[static_cast<std::size_t>(p.nic)].name,
                            "place a NIC on that socket, or bind jobs on this GPU with --cnet-bind=closest and expect less bandwidth",
                            FindingKind::placement, "pairing"});
      }
    }
  }
  return findings;
}

}  // namespace cnet::topology
