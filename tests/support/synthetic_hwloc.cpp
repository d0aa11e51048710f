#include "synthetic_hwloc.hpp"

#include <hwloc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cnet/common/text.hpp"

namespace cnet::testing {
namespace {


std::string format(const char* fmt, unsigned a, unsigned b = 0, unsigned c = 0, unsigned d = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

// Bitmaps in hwloc's own text form, so the importer reads back exactly what was meant.
std::string range_bitmap(unsigned first, unsigned count) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (count) hwloc_bitmap_set_range(set, static_cast<int>(first), static_cast<int>(first + count - 1));
  char* text = nullptr;
  hwloc_bitmap_asprintf(&text, set);
  std::string out = text ? text : "0x0";
  std::free(text);
  hwloc_bitmap_free(set);
  return out;
}

class Writer {
 public:
  explicit Writer(const SyntheticMachine& m) : m_(m) {}

  std::string run() {
    if (m_.packages == 0 || m_.numa.empty() || m_.numa.size() % m_.packages)
      throw std::invalid_argument("synthetic machine: NUMA nodes must divide evenly into packages");
    unsigned total_cores = 0;
    for (const auto& n : m_.numa) total_cores += n.cores;
    auto numa_count = static_cast<unsigned>(m_.numa.size());
    out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n";
    out_ << "<topology version=\"" << m_.xml_version << "\">\n";
    std::string cpus = range_bitmap(0, total_cores), nodes = range_bitmap(0, numa_count);
    out_ << "<object type=\"Machine\" os_index=\"0\" cpuset=\"" << cpus << "\" complete_cpuset=\"" << cpus
         << "\" allowed_cpuset=\"" << cpus << "\" nodeset=\"" << nodes << "\" complete_nodeset=\"" << nodes
         << "\" allowed_nodeset=\"" << nodes << "\" gp_index=\"" << gp_++ << "\">\n";
    out_ << "<info name=\"HostName\" value=\"" << common::xml_escaped(m_.hostname) << "\"/>\n<info name=\"Architecture\" value=\"x86_64\"/>\n";
    unsigned per_package = numa_count / m_.packages, core = 0;
    for (unsigned p = 0; p < m_.packages; ++p) {
      unsigned first_core = core, package_cores = 0;
      for (unsigned k = 0; k < per_package; ++k) package_cores += m_.numa[p * per_package + k].cores;
      open("Package", p, range_bitmap(first_core, package_cores), range_bitmap(p * per_package, per_package));
      out_ << "<info name=\"CPUVendor\" value=\"AuthenticAMD\"/>\n<info name=\"CPUModel\" value=\"AMD EPYC 7742 64-Core Processor\"/>\n";
      for (unsigned k = 0; k < per_package; ++k) {
        unsigned n = p * per_package + k;
        std::string cpuset = range_bitmap(core, m_.numa[n].cores), nodeset = range_bitmap(n, 1);
        // Several NUMA nodes in one package are Groups below it, as hwloc reports NPS4/SNC machines.
        if (per_package > 1) open("Group", -1, cpuset, nodeset);
        open("NUMANode", static_cast<int>(n), cpuset, nodeset, " local_memory=\"68719476736\"");
        out_ << "</object>\n";
        for (unsigned c = 0; c < m_.numa[n].cores; ++c, ++core) {
          open("Core", static_cast<int>(core), range_bitmap(core, 1), nodeset);
          open("PU", static_cast<int>(core), range_bitmap(core, 1), nodeset);
          out_ << "</object>\n</object>\n";
        }
        host_bridge(n, m_.numa[n]);
        if (per_package > 1) out_ << "</object>\n";
      }
      out_ << "</object>\n";
    }
    out_ << "</object>\n</topology>\n";
    return out_.str();
  }

 private:
  void open(const char* type, int os_index, const std::string& cpuset, const std::string& nodeset, const std::string& extra = "") {
    out_ << "<object type=\"" << type << "\"";
    if (os_index >= 0) out_ << " os_index=\"" << os_index << "\"";
    out_ << " cpuset=\"" << cpuset << "\" complete_cpuset=\"" << cpuset << "\" nodeset=\"" << nodeset
         << "\" complete_nodeset=\"" << nodeset << "\" gp_index=\"" << gp_++ << "\"" << extra << ">\n";
  }

  void bridge(unsigned domain, unsigned bus, unsigned dev, unsigned secondary, unsigned subordinate, unsigned depth,
              std::uint16_t vendor, std::uint16_t device) {
    out_ << "<object type=\"Bridge\" gp_index=\"" << gp_++ << "\" bridge_type=\"1-1\" depth=\"" << depth << "\" bridge_pci=\""
         << format("%04x:[%02x-%02x]", domain, secondary, subordinate) << "\" pci_busid=\"" << format("%04x:%02x:%02x.0", domain, bus, dev)
         << "\" pci_type=\"0604 [" << format("%04x:%04x", vendor, device) << "] [" << format("%04x:%04x", vendor, device)
         << "] 00\" pci_link_speed=\"24.615385\">\n";
  }

  void function(const SyntheticFunction& f, unsigned domain, unsigned bus, unsigned func) {
    out_ << "<object type=\"PCIDev\" gp_index=\"" << gp_++ << "\" pci_busid=\"" << format("%04x:%02x:00.%x", domain, bus, func)
         << "\" pci_type=\"" << format("%04x [%04x:%04x]", f.class_id, f.vendor, f.device) << " ["
         << format("%04x:%04x", f.subvendor, f.subdevice) << "] a1\" pci_link_speed=\"" << f.link_gbytes_per_s << "\">\n";
    if (!f.pci_name.empty()) out_ << "<info name=\"PCIDevice\" value=\"" << common::xml_escaped(f.pci_name) << "\"/>\n";
    if (!f.gpu_model.empty())
      out_ << "<object type=\"OSDev\" gp_index=\"" << gp_++ << "\" name=\"cuda" << cuda_++
           << "\" subtype=\"CUDA\" osdev_type=\"5\">\n<info name=\"GPUModel\" value=\"" << common::xml_escaped(f.gpu_model)
           << "\"/>\n<info name=\"CUDAGlobalMemorySize\" value=\"83886080\"/>\n</object>\n";
    if (!f.rdma_device.empty()) {
      out_ << "<object type=\"OSDev\" gp_index=\"" << gp_++ << "\" name=\"" << common::xml_escaped(f.rdma_device) << "\" osdev_type=\"3\">\n";
      if (!f.node_guid.empty()) out_ << "<info name=\"NodeGUID\" value=\"" << f.node_guid << "\"/>\n";
      if (!f.sys_image_guid.empty()) out_ << "<info name=\"SysImageGUID\" value=\"" << f.sys_image_guid << "\"/>\n";
      if (!f.port_state.empty()) out_ << "<info name=\"Port1State\" value=\"" << f.port_state << "\"/>\n";
      out_ << "</object>\n";
    }
    if (!f.netdev.empty())
      out_ << "<object type=\"OSDev\" gp_index=\"" << gp_++ << "\" name=\"" << common::xml_escaped(f.netdev) << "\" osdev_type=\"2\"/>\n";
    out_ << "</object>\n";
  }

  // One host bridge per NUMA node, in its own PCI domain; one root port per slot.
  void host_bridge(unsigned domain, const SyntheticNuma& numa) {
    if (numa.slots.empty()) return;
    unsigned buses = 0;
    for (const auto& s : numa.slots) buses += s.behind_switch ? 2 + static_cast<unsigned>(s.functions.size()) : 1;
    if (buses > 255 || domain > 0xffff) throw std::invalid_argument("synthetic machine: too many devices in one NUMA node");
    out_ << "<object type=\"Bridge\" gp_index=\"" << gp_++ << "\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\""
         << format("%04x:[00-%02x]", domain, buses) << "\">\n";
    unsigned next = 1;
    for (unsigned r = 0; r < numa.slots.size(); ++r) {
      const auto& slot = numa.slots[r];
      unsigned n = static_cast<unsigned>(slot.functions.size());
      if (!slot.behind_switch) {
        bridge(domain, 0, r + 1, next, next, 1, 0x1022, 0x1453);
        for (unsigned f = 0; f < n; ++f) function(slot.functions[f], domain, next, f);
        out_ << "</object>\n";
        ++next;
        continue;
      }
      unsigned up = next, down = next + 1, last = next + 1 + n;
      bridge(domain, 0, r + 1, up, last, 1, 0x1022, 0x1453);
      bridge(domain, up, 0, down, last, 2, 0x10b5, 0x8747);  // a PLX switch's upstream port
      for (unsigned f = 0; f < n; ++f) {
        bridge(domain, down, f, down + 1 + f, down + 1 + f, 3, 0x10b5, 0x8747);
        function(slot.functions[f], domain, down + 1 + f, 0);
        out_ << "</object>\n";
      }
      out_ << "</object>\n</object>\n";
      next = last + 1;
    }
    out_ << "</object>\n";
  }

  const SyntheticMachine& m_;
  std::ostringstream out_;
  unsigned gp_ = 1, cuda_ = 0;
};

}  // namespace

SyntheticFunction synthetic_gpu(std::string model) {
  SyntheticFunction f;
  f.gpu_model = std::move(model);
  return f;
}

SyntheticFunction synthetic_hca(std::string rdma_device, std::string netdev, std::string port_state) {
  SyntheticFunction f;
  f.kind = SyntheticFunction::Kind::nic;
  f.class_id = 0x0207;
  f.vendor = f.subvendor = 0x15b3;
  f.device = 0x101b;
  f.subdevice = 0x0007;
  f.pci_name = "MT28908 Family [ConnectX-6]";
  f.rdma_device = std::move(rdma_device);
  f.netdev = std::move(netdev);
  f.port_state = std::move(port_state);
  return f;
}

SyntheticFunction synthetic_roce(std::string rdma_device, std::string netdev) {
  SyntheticFunction f = synthetic_hca(std::move(rdma_device), std::move(netdev));
  f.class_id = 0x0200;
  return f;
}

std::string synthetic_hwloc_xml(const SyntheticMachine& machine) { return Writer(machine).run(); }

SyntheticMachine synthetic_scaled_machine(unsigned packages, unsigned numa_per_package, unsigned gpus_per_numa,
                                          unsigned hcas_per_numa, unsigned cores_per_numa) {
  SyntheticMachine m;
  m.hostname = "scaled";
  m.packages = packages;
  unsigned hca = 0;
  for (unsigned n = 0; n < packages * numa_per_package; ++n) {
    SyntheticNuma numa;
    numa.cores = cores_per_numa;
    SyntheticSlot slot;
    slot.behind_switch = true;
    for (unsigned g = 0; g < gpus_per_numa; ++g) slot.functions.push_back(synthetic_gpu());
    for (unsigned h = 0; h < hcas_per_numa; ++h, ++hca)
      slot.functions.push_back(synthetic_hca("mlx5_" + std::to_string(hca), "ib" + std::to_string(hca)));
    numa.slots.push_back(std::move(slot));
    m.numa.push_back(std::move(numa));
  }
  return m;
}

void write_synthetic_hwloc(const SyntheticMachine& machine, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  out << synthetic_hwloc_xml(machine);
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace cnet::testing
