#include <iomanip>
#include <sstream>

#include "cnet/topology/emit.hpp"
#include "cnet/topology/paths.hpp"

namespace cnet::topology {

std::string to_matrix(const NodeTopology& topo) {
  std::ostringstream out;
  // The cells are most of the text (GPUs squared): appended to one buffer, not formatted by a stream.
  std::string cells;
  cells.reserve((topo.gpus.size() + topo.nics.size() + 4) * (topo.gpus.size() + topo.nics.size() + 1) * 8);
  auto cell = [&](const std::string& s) {
    cells += s;
    if (s.size() < 8) cells.append(8 - s.size(), ' ');
  };
  auto flush_cells = [&] {
    out << cells;
    cells.clear();
  };
  out << std::string(8, ' ');
  for (const auto& g : topo.gpus) cell("GPU" + std::to_string(g.index));
  for (std::size_t i = 0; i < topo.nics.size(); ++i) cell("NIC" + std::to_string(i));
  flush_cells();
  out << "CPU Affinity    NUMA Affinity\n";

  auto locality_columns = [&](const Locality& l) {
    flush_cells();
    out << std::left << std::setw(15) << (l.cpuset.empty() ? "N/A" : l.cpuset) << ' '
        << (l.numa_node >= 0 ? std::to_string(l.numa_node) : "N/A") << '\n';
  };
  for (const auto& a : topo.gpus) {
    cell("GPU" + std::to_string(a.index));
    for (const auto& b : topo.gpus) cell(classify(a, b).label());
    for (const auto& n : topo.nics) cell(classify(a, n).label());
    locality_columns(a.locality);
  }
  for (std::size_t i = 0; i < topo.nics.size(); ++i) {
    const Nic& n = topo.nics[i];
    cell("NIC" + std::to_string(i));
    for (const auto& g : topo.gpus) cell(classify(g, n).label());
    for (std::size_t j = 0; j < topo.nics.size(); ++j)
      cell(i == j ? "X" : PathClass{pci_path_level(n.locality, topo.nics[j].locality), 0}.label());
    locality_columns(n.locality);
  }

  out << "\nLegend:\n"
         "  X    = Self\n"
         "  SYS  = Connection traversing PCIe as well as the SMP interconnect between sockets (CPU packages)\n"
         "  PKG  = Connection traversing PCIe as well as the interconnect between NUMA nodes of one CPU package\n"
         "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
         "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
         "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
         "  PIX  = Connection traversing at most a single PCIe bridge\n"
         "  NV#  = Connection traversing a bonded set of # NVLinks\n";
  if (!topo.nics.empty()) {
    out << "\nNIC Legend:\n";
    for (std::size_t i = 0; i < topo.nics.size(); ++i) {
      const Nic& n = topo.nics[i];
      out << "  NIC" << i << ": " << n.name << " (" << to_string(n.kind);
      out << ", " << (n.rate_gbps ? std::to_string(n.rate_gbps) + " Gb/s" : "rate unknown");
      if (n.mtu) out << ", MTU " << n.mtu;
      out << ", " << (n.state.empty() ? "state unknown" : n.state);
      out << ", " << n.pci.bus_id << ")\n";
    }
  }
  if (!topo.gpus.empty()) {
    out << "\nGPU NIC pairing (closest usable NIC, shared evenly):\n";
    for (const auto& p : pair_gpus_with_nics(topo)) {
      out << "  GPU" << p.gpu << " -> ";
      if (p.nic < 0) out << (topo.nics.empty() ? "none\n" : "none (no usable NIC)\n");
      else out << topo.nics[p.nic].name << " (" << p.path.label() << ")\n";
    }
  }
  return out.str();
}

}  // namespace cnet::topology
