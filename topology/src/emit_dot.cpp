// The node as a Graphviz graph: packages and NUMA nodes as nested boxes, the PCIe tree from each host
// bridge down to the GPUs and NICs, the GPU<->NIC pairing cnet chose (pair_gpus_with_nics) with each
// pair's path class, NVLinks to the NVSwitches, DOWN ports and unknown values marked. Graphviz's dot
// does the layout (cnet-topo --format svg renders it with libgvc); nothing here places coordinates.
#include <map>
#include <set>
#include <sstream>

#include "cnet/topology/emit.hpp"
#include "cnet/topology/paths.hpp"

namespace cnet::topology {
namespace {

constexpr const char *kDownFill = "#f4c7c3", *kGpuFill = "#d9ead3", *kNicFill = "#cfe2f3", *kBridgeFill = "#eeeeee";

// A DOT string literal: quotes and backslashes escaped, control characters dropped, bytes outside ASCII
// (a vendor string from sysfs need not be UTF-8, which Graphviz expects) shown as '?'.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) >= 0x80) out += '?';
    else if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string or_unknown(const std::string& s, const std::string& what) { return s.empty() ? what + " ?" : s; }

std::string gib(std::uint64_t bytes) {
  if (bytes == 0) return "memory ?";
  std::ostringstream s;
  s.precision(bytes >= (10ull << 30) ? 0 : 1);
  s << std::fixed << static_cast<double>(bytes) / (1ull << 30) << " GiB";
  return s.str();
}

bool is_down(const Nic& nic) { return !nic.state.empty() && !usable(nic); }

std::string gpu_label(const Gpu& g) {
  return "GPU" + std::to_string(g.index) + "\n" + or_unknown(g.model, "model") + "\n" + gib(g.memory_bytes) + " | " + g.pci.bus_id;
}

std::string nic_label(const Nic& n) {
  std::string name = n.name;
  if (!n.netdev.empty() && n.netdev != n.name) name += " (" + n.netdev + ")";
  std::string rate = n.rate_gbps ? std::to_string(n.rate_gbps) + " Gb/s" : "rate ?";
  if (n.lanes) rate += " " + std::to_string(n.lanes) + "X";
  std::string state = n.state.empty() ? "state ?" : n.state;
  if (is_down(n)) state += " (not usable)";
  return name + "\n" + to_string(n.kind) + " " + rate + " | MTU " + (n.mtu ? std::to_string(n.mtu) : "?") + "\n" + state;
}

// Where a device hangs: its package (cluster) and the node above it (the last hop of its PCIe path,
// else its NUMA node, else the package).
struct Placement {
  int package = -1;
  std::string parent;
};

class DotWriter {
 public:
  explicit DotWriter(const NodeTopology& topo) : topo_(topo) {}

  std::string write() {
    collect_numa_packages();
    for (const auto& g : topo_.gpus) place("gpu" + std::to_string(g.index), g.locality, node_line("gpu" + std::to_string(g.index), gpu_label(g), kGpuFill, ""));
    for (std::size_t i = 0; i < topo_.nics.size(); ++i) {
      const Nic& n = topo_.nics[i];
      place("nic" + std::to_string(i), n.locality,
            node_line("nic" + std::to_string(i), nic_label(n), is_down(n) ? kDownFill : kNicFill, is_down(n) ? ", color=\"#cc0000\", penwidth=2" : ""));
    }
    std::ostringstream out;
    out << "graph " << quoted("cnet-topo " + topo_.hostname) << " {\n"
        << "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, labelloc=t, compound=true, newrank=true, forcelabels=true, nodesep=0.25, ranksep=0.45, label="
        << quoted(title()) << "];\n"
        << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=10];\n"
        << "  edge [color=\"#777777\"];\n";
    std::set<int> packages;
    for (const auto& [numa, pkg] : numa_package_) packages.insert(pkg);
    for (const auto& [name, pkg] : members_) packages.insert(pkg);
    for (int pkg : packages) {
      const bool known = pkg >= 0;
      out << "  subgraph cluster_package_" << (known ? std::to_string(pkg) : "unknown") << " {\n    label="
          << quoted(known ? "Package " + std::to_string(pkg) + (topo_.cpu.model_name.empty() ? "" : ": " + topo_.cpu.model_name)
                          : "package ? (not reported)")
          << "; style=\"rounded,filled\"; fillcolor=\"#f7f7f7\"; color=\"#999999\";\n";
      for (const auto& numa : topo_.numa_nodes)
        if (package_of_numa(static_cast<int>(numa.os_index)) == pkg)
          out << "    " << node_line("numa" + std::to_string(numa.os_index), numa_label(numa), "#fff2cc", "");
      for (const auto& [name, member_pkg] : members_)
        if (member_pkg == pkg) out << "    " << lines_[name];
      out << "  }\n";
    }
    for (const auto& e : edges_) out << "  " << e;
    pairing(out);
    nvlinks(out);
    legend(out);
    out << "}\n";
    return out.str();
  }

 private:
  std::string title() const {
    return (topo_.hostname.empty() ? std::string("(no host name)") : topo_.hostname) + ": " + std::to_string(topo_.packages) + " package(s), " + std::to_string(topo_.numa_nodes.size()) + " NUMA node(s), " +
           std::to_string(topo_.gpus.size()) + " GPU(s), " + std::to_string(topo_.nics.size()) + " NIC(s)";
  }

  std::string numa_label(const NumaNode& n) const {
    return "NUMA " + std::to_string(n.os_index) + "\nCPUs " + or_unknown(n.cpuset, "") + " | " + gib(n.memory_bytes);
  }

  static std::string node_line(const std::string& id, const std::string& label, const std::string& fill, const std::string& extra) {
    return id + " [label=" + quoted(label) + ", fillcolor=\"" + fill + "\"" + extra + "];\n";
  }

  void collect_numa_packages() {
    auto note = [&](const Locality& l) {
      if (l.numa_node >= 0 && l.package >= 0) numa_package_.emplace(l.numa_node, l.package);
    };
    for (const auto& g : topo_.gpus) note(g.locality);
    for (const auto& n : topo_.nics) note(n.locality);
    for (const auto& numa : topo_.numa_nodes) numa_package_.emplace(static_cast<int>(numa.os_index), -1);
  }
  int package_of_numa(int numa) const {
    auto it = numa_package_.find(numa);
    return it == numa_package_.end() ? -1 : it->second;
  }

  // A device and the PCIe hops above it, each hop once, under its package's cluster.
  void place(const std::string& id, const Locality& l, const std::string& line) {
    const int pkg = l.package >= 0 ? l.package : package_of_numa(l.numa_node);
    std::string above = l.numa_node >= 0 && numa_package_.count(l.numa_node) ? "numa" + std::to_string(l.numa_node) : "";
    for (const auto& hop : l.pci_path) {
      const std::string hop_id = "hop" + std::to_string(hop.id);
      if (!lines_.count(hop_id)) {
        std::string label = hop.host_bridge ? "host bridge" : "PCIe switch/bridge\n" + hop.bus_id;
        if (hop.link_gbytes_per_s > 0) label += "\n" + std::to_string(static_cast<int>(hop.link_gbytes_per_s + 0.5)) + " GB/s";
        lines_[hop_id] = node_line(hop_id, label, kBridgeFill, ", shape=box, style=\"filled\", fontsize=9");
        members_.emplace(hop_id, pkg);
        if (!above.empty()) edges_.push_back(above + " -- " + hop_id + ";\n");
      }
      above = hop_id;
    }
    lines_[id] = line;
    members_.emplace(id, pkg);
    if (!above.empty()) edges_.push_back(above + " -- " + id + ";\n");
  }

  void pairing(std::ostringstream& out) const {
    for (const auto& p : pair_gpus_with_nics(topo_)) {
      if (p.nic < 0) continue;
      // xlabel, placed after layout: a labelled edge between two devices on one rank goes through dot's
      // flat-edge label code, which frees memory twice in Graphviz 2.42 (Debian 12).
      out << "  gpu" << p.gpu << " -- nic" << p.nic << " [style=dashed, color=\"#1f5fbf\", fontcolor=\"#1f5fbf\", fontsize=9, constraint=false, xlabel="
          << quoted(p.path.label()) << "];\n";
    }
  }

  void nvlinks(std::ostringstream& out) const {
    if (topo_.nvswitch_bus_ids.empty()) return;
    out << "  nvswitch [label=" << quoted("NVSwitch x" + std::to_string(topo_.nvswitch_bus_ids.size())) << ", fillcolor=\"#e6f2cc\"];\n";
    for (const auto& g : topo_.gpus) {
      unsigned links = 0;
      for (const auto& l : g.nvlinks)
        if (l.target == NvLink::Target::nvswitch) links += l.count;
      if (links) out << "  gpu" << g.index << " -- nvswitch [color=\"#76b900\", fontsize=8, label=" << quoted("NV" + std::to_string(links)) << "];\n";
    }
  }

  void legend(std::ostringstream& out) const {
    out << "  subgraph cluster_legend {\n    label=\"legend\"; style=\"rounded\"; color=\"#bbbbbb\"; fontsize=10;\n"
        << "    legend [shape=plaintext, style=\"\", fontsize=9, label=" << quoted(
               "dashed blue: the NIC cnet pairs with each GPU, labelled with their path class\n"
               "(PIX one bridge, PXB several, PHB through the host bridge, NODE across host bridges\n"
               "of one NUMA node, PKG across a package's NUMA nodes, SYS across packages)\n"
               "red: a port a job cannot use (DOWN/INIT)   '?': not reported by hwloc, sysfs or NVML")
        << "];\n  }\n";
  }

  const NodeTopology& topo_;
  std::map<int, int> numa_package_;              // NUMA node -> package (-1 unknown)
  std::map<std::string, std::string> lines_;     // node id -> its DOT line
  std::map<std::string, int> members_;              // node id -> package cluster
  std::vector<std::string> edges_;
};

}  // namespace

std::string to_dot(const NodeTopology& topo) { return DotWriter(topo).write(); }

}  // namespace cnet::topology
