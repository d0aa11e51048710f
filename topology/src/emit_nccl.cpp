// NCCL topology XML (NCCL_TOPO_FILE), in the shape NCCL dumps itself: <cpu> per NUMA node, a <pci>
// node per PCIe switch keyed by its upstream port (NCCL takes a device's sysfs grandparent), then the
// GPU and NIC functions with their <gpu>/<nic> children.
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "cnet/topology/emit.hpp"

namespace cnet::topology {
namespace {

struct XmlNode {
  std::string tag;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<std::unique_ptr<XmlNode>> children;
  XmlNode* add(std::string child_tag) {
    children.push_back(std::make_unique<XmlNode>());
    children.back()->tag = std::move(child_tag);
    return children.back().get();
  }
  XmlNode* set(std::string key, std::string value) {
    attrs.emplace_back(std::move(key), std::move(value));
    return this;
  }
};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

void render_xml(const XmlNode& n, int depth, std::ostringstream& out) {
  out << std::string(depth * 2, ' ') << '<' << n.tag;
  for (const auto& [k, v] : n.attrs) out << ' ' << k << "=\"" << escape(v) << '"';
  if (n.children.empty()) {
    out << "/>\n";
    return;
  }
  out << ">\n";
  for (const auto& c : n.children) render_xml(*c, depth + 1, out);
  out << std::string(depth * 2, ' ') << "</" << n.tag << ">\n";
}

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

// hwloc gives the link in GB/s; NCCL wants generation and width. Pick the pair that explains it,
// preferring wider links; unknown speeds fall back to Gen3 x16, which is also NCCL's own default.
std::pair<std::string, std::string> pcie_link(float gbytes_per_s) {
  struct Gen { const char* speed; double lane_gbytes; };
  static const Gen gens[] = {{"2.5 GT/s PCIe", 0.25}, {"5.0 GT/s PCIe", 0.5}, {"8.0 GT/s PCIe", 0.9846},
                             {"16.0 GT/s PCIe", 1.969}, {"32.0 GT/s PCIe", 3.938}, {"64.0 GT/s PCIe", 7.877}};
  if (gbytes_per_s > 0) {
    for (int width : {16, 8, 4, 2, 1})
      for (const auto& g : gens)
        if (std::fabs(g.lane_gbytes * width - gbytes_per_s) < 0.03 * gbytes_per_s) return {g.speed, std::to_string(width)};
  }
  return {"8.0 GT/s PCIe", "16"};
}

void set_pci_attrs(XmlNode* node, const std::string& bus_id, std::uint32_t class_id, std::uint16_t vendor,
                   std::uint16_t device, std::uint16_t subvendor, std::uint16_t subdevice, float link) {
  auto [speed, width] = pcie_link(link);
  node->set("busid", bus_id)->set("class", hex(class_id << 8, 6))->set("vendor", hex(vendor, 4))
      ->set("device", hex(device, 4))->set("subsystem_vendor", hex(subvendor, 4))
      ->set("subsystem_device", hex(subdevice, 4))->set("link_speed", speed)->set("link_width", width);
}

// Compute capability by product family, for NCCL's bandwidth model; empty lets NCCL ask CUDA itself.
std::string sm_of(const std::string& model) {
  static const std::pair<const char*, const char*> families[] = {
      {"B200", "100"}, {"B100", "100"}, {"H200", "90"}, {"H100", "90"}, {"H800", "90"}, {"GH200", "90"},
      {"L40", "89"},   {"L4", "89"},    {"A100", "80"}, {"A800", "80"}, {"A30", "80"},  {"A40", "86"},
      {"A10", "86"},   {"T4", "75"},    {"V100", "70"}, {"P100", "60"}, {"K80", "37"},  {"K40", "35"},
      {"M2075", "20"}, {"M2090", "20"}};
  for (const auto& [family, sm] : families)
    if (model.find(family) != std::string::npos) return sm;
  return "";
}

std::string guid_hex(const std::string& guid) {
  std::string digits;
  for (char c : guid)
    if (c != ':') digits += c;
  return digits.empty() ? "" : "0x" + digits;
}

class NcclTree {
 public:
  NcclTree(const NodeTopology& topo) : topo_(topo) { root_.tag = "system"; root_.set("version", "1"); }

  // The <pci> node a device hangs under: its switch (upstream port), nested like NCCL's sysfs walk.
  XmlNode* parent_for(const Locality& loc) {
    XmlNode* parent = cpu_for(loc);
    const auto& path = loc.pci_path;
    std::vector<const PciHop*> switches;
    for (int i = static_cast<int>(path.size()) - 2; i >= 0; i -= 2) {
      if (path[i].host_bridge || path[i].bus_id.empty()) break;
      switches.insert(switches.begin(), &path[i]);
    }
    for (const PciHop* hop : switches) {
      auto& slot = switches_[hop->bus_id];
      if (!slot) {
        slot = parent->add("pci");
        set_pci_attrs(slot, hop->bus_id, hop->class_id ? hop->class_id : 0x0604, hop->vendor_id, hop->device_id, 0, 0,
                      hop->link_gbytes_per_s);
      }
      parent = slot;
    }
    return parent;
  }

  std::string render() const {
    std::ostringstream out;
    render_xml(root_, 0, out);
    return out.str();
  }

 private:
  XmlNode* cpu_for(const Locality& loc) {
    int numa = loc.numa_node >= 0 ? loc.numa_node : (topo_.numa_nodes.size() == 1 ? 0 : -1);
    auto& slot = cpus_[numa];
    if (slot) return slot;
    slot = root_.add("cpu");
    std::string affinity = loc.cpumask;
    for (const auto& n : topo_.numa_nodes)
      if (static_cast<int>(n.os_index) == numa) affinity = n.cpumask;
    slot->set("numaid", std::to_string(numa));
    if (!affinity.empty()) slot->set("affinity", affinity);
    slot->set("arch", topo_.cpu.arch);
    if (!topo_.cpu.vendor.empty()) slot->set("vendor", topo_.cpu.vendor);
    if (!topo_.cpu.family.empty()) slot->set("familyid", topo_.cpu.family);
    if (!topo_.cpu.model.empty()) slot->set("modelid", topo_.cpu.model);
    return slot;
  }

  const NodeTopology& topo_;
  XmlNode root_;
  std::map<int, XmlNode*> cpus_;
  std::map<std::string, XmlNode*> switches_;
};

}  // namespace

std::string to_nccl_xml(const NodeTopology& topo) {
  NcclTree tree(topo);
  for (const auto& g : topo.gpus) {
    XmlNode* pci = tree.parent_for(g.locality)->add("pci");
    set_pci_attrs(pci, g.pci.bus_id, g.pci.class_id, g.pci.vendor_id, g.pci.device_id, g.pci.subvendor_id,
                  g.pci.subdevice_id, g.pci.link_gbytes_per_s);
    XmlNode* gpu = pci->add("gpu")->set("dev", std::to_string(g.index));
    if (auto sm = sm_of(g.model); !sm.empty()) gpu->set("sm", sm);
    gpu->set("rank", std::to_string(g.index))->set("gdr", "1");
    for (const auto& l : g.nvlinks) {
      if (l.target == NvLink::Target::cpu) continue;  // CPU NVLink (POWER) is NCCL's own detection
      gpu->add("nvlink")->set("target", l.target_bus_id)->set("count", std::to_string(l.count))
          ->set("tclass", l.target == NvLink::Target::nvswitch ? "0x068000" : "0x030200");
    }
  }
  unsigned dev = 0;
  for (const auto& n : topo.nics) {
    XmlNode* pci = tree.parent_for(n.locality)->add("pci");
    set_pci_attrs(pci, n.pci.bus_id, n.pci.class_id, n.pci.vendor_id, n.pci.device_id, n.pci.subvendor_id,
                  n.pci.subdevice_id, n.pci.link_gbytes_per_s);
    XmlNode* net = pci->add("nic")->add("net");
    net->set("name", n.name)->set("dev", std::to_string(dev++));
    if (n.rate_gbps) net->set("speed", std::to_string(n.rate_gbps * 1000));
    net->set("port", std::to_string(n.port));
    if (auto guid = guid_hex(n.guid); !guid.empty()) net->set("guid", guid);
    net->set("gdr", n.rdma_device.empty() ? "0" : "1");
  }
  return tree.render();
}

}  // namespace cnet::topology
