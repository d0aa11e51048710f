// NCCL topology XML (NCCL_TOPO_FILE), in the shape NCCL dumps itself: <cpu> per NUMA node, a <pci>
// node per PCIe switch keyed by its upstream port (NCCL takes a device's sysfs grandparent), then the
// GPU and NIC functions with their <gpu>/<nic> children.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>

#include "cnet/common/text.hpp"
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


std::string attr(const XmlNode& n, const std::string& key) {
  for (const auto& [k, v] : n.attrs)
    if (k == key) return v;
  return "";
}

// Children in the order NCCL's own dump has them: CPUs by NUMA id, PCI functions by bus id.
std::vector<const XmlNode*> sorted_children(const XmlNode& n) {
  std::vector<const XmlNode*> out;
  for (const auto& c : n.children) out.push_back(c.get());
  std::stable_sort(out.begin(), out.end(), [](const XmlNode* a, const XmlNode* b) {
    if (a->tag == "cpu" && b->tag == "cpu") return std::stoi(attr(*a, "numaid")) < std::stoi(attr(*b, "numaid"));
    return attr(*a, "busid") < attr(*b, "busid");
  });
  return out;
}

void render_xml(const XmlNode& n, int depth, std::ostringstream& out) {
  out << std::string(depth * 2, ' ') << '<' << n.tag;
  for (const auto& [k, v] : n.attrs) out << ' ' << k << "=\"" << common::xml_escaped(v) << '"';
  if (n.children.empty()) {
    out << "/>\n";
    return;
  }
  out << ">\n";
  for (const XmlNode* c : sorted_children(n)) render_xml(*c, depth + 1, out);
  out << std::string(depth * 2, ' ') << "</" << n.tag << ">\n";
}

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

// hwloc gives the link in GB/s; NCCL wants generation and width. Pick the pair that explains it,
// preferring wider links. An unknown link is written the way the kernel's sysfs writes it ("Unknown",
// width 0), which NCCL reads as its own defaults rather than as a measured Gen3 x16.
std::pair<std::string, std::string> pcie_link(float gbytes_per_s) {
  struct Gen { const char* speed; double lane_gbytes; };
  static const Gen gens[] = {{"2.5 GT/s PCIe", 0.25}, {"5.0 GT/s PCIe", 0.5}, {"8.0 GT/s PCIe", 0.9846},
                             {"16.0 GT/s PCIe", 1.969}, {"32.0 GT/s PCIe", 3.938}, {"64.0 GT/s PCIe", 7.877}};
  if (gbytes_per_s > 0) {
    for (int width : {16, 8, 4, 2, 1})
      for (const auto& g : gens)
        if (std::fabs(g.lane_gbytes * width - gbytes_per_s) < 0.03 * gbytes_per_s) return {g.speed, std::to_string(width)};
  }
  return {"Unknown", "0"};
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

// NCCL's guid is the verbs sys_image_guid, a big-endian 64-bit value it reads as a plain integer on
// a little-endian host and prints with %#lx; functions and ports of one card share it, which is how
// NCCL knows they are one ASIC. "" when the system image GUID is unknown (NCCL then fills it itself).
std::string nccl_guid(const std::string& system_guid) {
  std::string digits;
  for (char c : system_guid)
    if (c != ':') digits += c;
  if (digits.empty() || digits.size() > 16 || digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return "";
  std::uint64_t big_endian = std::stoull(digits, nullptr, 16);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(__builtin_bswap64(big_endian)));
  return buf;
}

// NCCL keeps at most 255 characters of an attribute and parses affinity as comma-separated 32-bit hex
// words counted from the last one (CPUs 0-31), so leading zero words and zero digits can go; a mask
// that still does not fit (over ~900 CPUs in one NUMA node) is left out for NCCL to read from sysfs.
std::string nccl_affinity(const std::string& cpumask) {
  std::vector<std::string> words;
  std::stringstream in(cpumask);
  for (std::string w; std::getline(in, w, ',');) {
    auto first = w.find_first_not_of('0');
    words.push_back(first == std::string::npos ? "0" : w.substr(first));
  }
  while (words.size() > 1 && words.front() == "0") words.erase(words.begin());
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ",") + w;
  return out.size() <= 255 ? out : "";
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
        set_pci_attrs(slot, hop->bus_id, hop->class_id ? hop->class_id : 0x0604, hop->vendor_id, hop->device_id, hop->subvendor_id,
                      hop->subdevice_id, hop->link_gbytes_per_s);
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
    if (auto compact = nccl_affinity(affinity); !compact.empty()) slot->set("affinity", compact);
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
    // gdr is left out: NCCL asks CUDA whether this GPU supports GPUDirect RDMA and only fills an
    // absent attribute.
    gpu->set("rank", std::to_string(g.index));
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
    if (auto guid = nccl_guid(n.system_guid); !guid.empty()) net->set("guid", guid);
    // GPUDirect RDMA only where it was seen to work (the peer-memory module NCCL itself looks for);
    // otherwise NCCL's own detection decides. A socket NIC never has it.
    if (n.rdma_device.empty()) net->set("gdr", "0");
    else if (!topo.gpudirect_rdma.empty()) net->set("gdr", "1");
  }
  return tree.render();
}

}  // namespace cnet::topology
