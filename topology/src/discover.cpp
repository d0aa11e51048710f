#include "cnet/topology/discover.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "cnet/common/host.hpp"
#include "cnet/topology/nvml.hpp"
#include "cnet/topology/sysfs.hpp"
#include "hwloc_xml_screen.hpp"

namespace cnet::topology {
namespace {

constexpr std::uint16_t kNvidia = 0x10de, kAmd = 0x1002;

using PcidevAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;
using TopologyHandle = std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)>;

std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  return v ? v : "";
}

std::string bitmap_list(hwloc_const_bitmap_t set) {
  char* s = nullptr;
  hwloc_bitmap_list_asprintf(&s, set);
  std::string out = s ? s : "";
  std::free(s);
  return out;
}

// Linux cpumap format ("00000000,00ffffff"): 32-bit words, most significant first, no 0x. NCCL's
// affinity attribute parses exactly this and silently misreads anything else.
std::string cpumap(hwloc_const_bitmap_t set, int last_cpu) {
  int words = std::max(1, (last_cpu + 32) / 32);
  std::string out;
  for (int w = words - 1; w >= 0; --w) {
    unsigned long chunk = hwloc_bitmap_to_ith_ulong(set, static_cast<unsigned>(w / (sizeof(unsigned long) / 4)));
    unsigned word = static_cast<unsigned>((chunk >> (32 * (w % (sizeof(unsigned long) / 4)))) & 0xffffffffUL);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", word);
    out += buf;
    if (w) out += ',';
  }
  return out;
}

std::string bus_id(const PcidevAttr& p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", p.domain, p.bus, p.dev, p.func);
  return buf;
}

PciIdentity pci_identity(hwloc_obj_t obj) {
  const auto& p = obj->attr->pcidev;
  return {bus_id(p), p.class_id, p.vendor_id, p.device_id, p.subvendor_id, p.subdevice_id, p.linkspeed};
}

class HwlocReader {
 public:
  HwlocReader(hwloc_topology_t t) : t_(t) {
    hwloc_obj_t machine = hwloc_get_root_obj(t_);
    last_cpu_ = hwloc_bitmap_last(machine->complete_cpuset);
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(t_, HWLOC_OBJ_PACKAGE, p));) packages_.push_back(p);
  }

  Locality locality(hwloc_obj_t io) {
    std::vector<PciHop> path;
    for (hwloc_obj_t p = io->parent; p && hwloc_obj_type_is_io(p->type); p = p->parent) {
      if (p->type != HWLOC_OBJ_BRIDGE) continue;
      PciHop hop;
      hop.id = p->gp_index;
      hop.host_bridge = p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
      if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
        const auto& up = p->attr->bridge.upstream.pci;
        hop.bus_id = bus_id(up);
        hop.class_id = up.class_id;
        hop.vendor_id = up.vendor_id;
        hop.device_id = up.device_id;
        hop.subvendor_id = up.subvendor_id;
        hop.subdevice_id = up.subdevice_id;
        hop.link_gbytes_per_s = up.linkspeed;
      }
      path.insert(path.begin(), hop);
    }
    hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(t_, io);
    Locality loc = cpu_side && cpu_side->cpuset ? cpu_locality(cpu_side) : Locality{};
    loc.pci_path = std::move(path);
    return loc;
  }

  int last_cpu() const { return last_cpu_; }

 private:
  // The CPU side of a locality, worked out once per CPU-side object: a node's devices share a few of
  // them, and walking every core for every device would grow with devices times cores.
  const Locality& cpu_locality(hwloc_obj_t cpu_side) {
    auto [it, fresh] = cpu_sides_.try_emplace(cpu_side->gp_index);
    Locality& loc = it->second;
    if (!fresh) return loc;
    loc.cpuset = bitmap_list(cpu_side->cpuset);
    loc.cpumask = cpumap(cpu_side->cpuset, last_cpu_);
    if (cpu_side->nodeset) {
      loc.nodeset = bitmap_list(cpu_side->nodeset);
      if (hwloc_bitmap_weight(cpu_side->nodeset) == 1) loc.numa_node = hwloc_bitmap_first(cpu_side->nodeset);
    }
    loc.package = package_of(cpu_side->cpuset);
    loc.cores = cores_in(cpu_side->cpuset);
    for (hwloc_obj_t p : packages_)
      if (loc.package >= 0 && p->cpuset && hwloc_bitmap_intersects(cpu_side->cpuset, p->cpuset)) loc.package_cores = cores_in(p->cpuset);
    return loc;
  }

  // The one package whose CPUs the object's CPUs fall in; -1 when they span several (a NUMA node of
  // four sockets) or the export has no packages.
  std::vector<unsigned> cores_in(hwloc_const_bitmap_t cpus) const {
    std::vector<unsigned> out;
    for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_inside_cpuset_by_type(t_, cpus, HWLOC_OBJ_CORE, core));)
      out.push_back(core->logical_index);
    return out;
  }

  int package_of(hwloc_const_bitmap_t cpus) const {
    int found = -1, count = 0;
    for (hwloc_obj_t p : packages_) {
      if (!p->cpuset || !hwloc_bitmap_intersects(p->cpuset, cpus)) continue;
      found = p->os_index == HWLOC_UNKNOWN_INDEX ? static_cast<int>(p->logical_index) : static_cast<int>(p->os_index);
      ++count;
    }
    return count == 1 ? found : -1;
  }

  hwloc_topology_t t_;
  int last_cpu_ = 0;
  std::vector<hwloc_obj_t> packages_;
  std::map<std::uint64_t, Locality> cpu_sides_;
};

bool is_gpu(const PcidevAttr& p) {
  unsigned base = p.class_id >> 8;
  if (p.vendor_id == kNvidia) return base == 0x03;
  // AMD compute parts are 3D/display controllers or accelerators; 0x0300 VGA is a desktop/BMC head.
  if (p.vendor_id == kAmd) return p.class_id == 0x0302 || p.class_id == 0x0380 || p.class_id == 0x1200;
  return false;
}

bool is_nic(const PcidevAttr& p) { return (p.class_id >> 8) == 0x02 || p.class_id == 0x0c06; }
// hwloc marks NVSwitches with a subtype even where it could not read their class.
bool is_nvswitch(hwloc_obj_t obj) {
  const auto& p = obj->attr->pcidev;
  return (p.vendor_id == kNvidia && p.class_id == 0x0680) || (obj->subtype && std::strcmp(obj->subtype, "NVSwitch") == 0);
}

// "GV100GL [Tesla V100 SXM3 32GB]" -> "Tesla V100 SXM3 32GB"
std::string model_from_pci_name(const std::string& name) {
  auto open = name.find('['), close = name.rfind(']');
  if (open != std::string::npos && close != std::string::npos && close > open + 1)
    return name.substr(open + 1, close - open - 1);
  return name;
}

std::uint64_t memory_from_model(const std::string& model) {
  static const std::regex gb("([0-9]+)\\s*GB", std::regex::icase);
  std::smatch m;
  return std::regex_search(model, m, gb) ? std::stoull(m[1]) << 30 : 0;
}

std::string rdma_state_name(const std::string& code) {
  static const std::map<std::string, std::string> names = {
      {"0", "NOP"}, {"1", "DOWN"}, {"2", "INIT"}, {"3", "ARMED"}, {"4", "ACTIVE"}, {"5", "ACTIVE_DEFER"}};
  auto it = names.find(code);
  return it == names.end() ? code : it->second;
}

Gpu read_gpu(HwlocReader& reader, hwloc_obj_t pcidev) {
  Gpu gpu;
  gpu.pci = pci_identity(pcidev);
  gpu.vendor = gpu.pci.vendor_id == kNvidia ? "NVIDIA" : "AMD";
  gpu.locality = reader.locality(pcidev);
  for (hwloc_obj_t os = pcidev->io_first_child; os; os = os->next_sibling) {
    std::string model = info(os, "GPUModel");
    if (!model.empty()) gpu.model = model;
    std::string kib = info(os, "CUDAGlobalMemorySize");
    if (!kib.empty()) gpu.memory_bytes = std::strtoull(kib.c_str(), nullptr, 10) << 10;
  }
  if (gpu.model.empty()) gpu.model = model_from_pci_name(info(pcidev, "PCIDevice"));
  if (gpu.model.empty()) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04x", gpu.pci.device_id);
    gpu.model = gpu.vendor + " " + buf;
  }
  if (!gpu.memory_bytes) gpu.memory_bytes = memory_from_model(gpu.model);
  return gpu;
}

Nic read_nic(HwlocReader& reader, hwloc_obj_t pcidev) {
  Nic nic;
  nic.pci = pci_identity(pcidev);
  nic.locality = reader.locality(pcidev);
  for (hwloc_obj_t os = pcidev->io_first_child; os; os = os->next_sibling) {
    if (os->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && nic.rdma_device.empty()) {
      nic.rdma_device = os->name;
      nic.guid = info(os, "NodeGUID");
      nic.system_guid = info(os, "SysImageGUID");
      for (unsigned port = 1; port <= 4; ++port) {
        std::string state = info(os, ("Port" + std::to_string(port) + "State").c_str());
        if (state.empty()) continue;
        nic.port = port;
        nic.state = rdma_state_name(state);
        break;
      }
    } else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
      // A dual-personality card lists an Ethernet and an IPoIB netdev; keep the IPoIB one for IB.
      std::string name = os->name;
      if (nic.netdev.empty() || name.rfind("ib", 0) == 0) nic.netdev = name;
    }
  }
  bool ib_class = nic.pci.class_id == 0x0207 || nic.pci.class_id == 0x0c06;
  if (!nic.rdma_device.empty()) nic.kind = ib_class || nic.netdev.rfind("ib", 0) == 0 ? NicKind::ib : NicKind::roce;
  nic.name = nic.rdma_device.empty() ? nic.netdev : nic.rdma_device;
  return nic;
}

// Fills rate, lanes, MTU, state and link layer from sysfs, which hwloc does not record.
void enrich_from_sysfs(Nic& nic, const SysfsReader& sysfs) {
  if (nic.rdma_device.empty()) {
    auto found = sysfs.rdma_devices_of_pci(nic.pci.bus_id);
    if (!found.empty()) nic.rdma_device = found.front();
  }
  if (!nic.rdma_device.empty() && nic.verbs_device.empty()) nic.verbs_device = sysfs.verbs_device_of(nic.rdma_device);
  if (!nic.rdma_device.empty() && nic.system_guid.empty()) nic.system_guid = sysfs.rdma_system_guid(nic.rdma_device);
  if (nic.netdev.empty()) {
    auto found = sysfs.netdevs_of_pci(nic.pci.bus_id);
    if (!found.empty()) nic.netdev = found.front();
  }
  if (!nic.rdma_device.empty()) {
    auto ports = sysfs.rdma_ports(nic.rdma_device);
    if (!ports.empty() && std::find(ports.begin(), ports.end(), nic.port) == ports.end()) nic.port = ports.front();
    if (auto port = sysfs.rdma_port(nic.rdma_device, nic.port)) {
      if (!port->state.empty()) nic.state = port->state;
      if (port->rate_gbps) nic.rate_gbps = port->rate_gbps;
      nic.lanes = port->lanes;
      if (port->link_layer == "InfiniBand") nic.kind = NicKind::ib;
      else if (port->link_layer == "Ethernet") nic.kind = NicKind::roce;
    }
  }
  if (!nic.netdev.empty()) {
    if (auto dev = sysfs.netdev(nic.netdev)) {
      nic.mtu = dev->mtu;
      if (nic.rdma_device.empty()) {
        nic.state = dev->operstate;
        nic.rate_gbps = dev->speed_mbps / 1000;
      } else if (!nic.rate_gbps) {
        nic.rate_gbps = dev->speed_mbps / 1000;
      }
    }
  }
  nic.name = nic.rdma_device.empty() ? nic.netdev : nic.rdma_device;
}

// NVLinkBandwidth (MB/s summed over links): 25000 per NVLink 2-4 link, 20000 per NVLink 1 link.
unsigned links_from_bandwidth(std::uint64_t mbps) {
  if (mbps == 0) return 0;
  if (mbps % 25000 == 0) return static_cast<unsigned>(mbps / 25000);
  if (mbps % 20000 == 0) return static_cast<unsigned>(mbps / 20000);
  return static_cast<unsigned>(std::max<std::uint64_t>(1, (mbps + 12500) / 25000));
}

// The PCI bus id of an object in a distances matrix, and what kind of NVLink endpoint it is.
std::optional<std::pair<std::string, NvLink::Target>> nvlink_endpoint(hwloc_obj_t obj) {
  if (obj->type == HWLOC_OBJ_OS_DEVICE && obj->parent && obj->parent->type == HWLOC_OBJ_PCI_DEVICE)
    return std::make_pair(bus_id(obj->parent->attr->pcidev), NvLink::Target::gpu);
  if (obj->type == HWLOC_OBJ_PCI_DEVICE)
    return std::make_pair(bus_id(obj->attr->pcidev),
                          is_nvswitch(obj) ? NvLink::Target::nvswitch : NvLink::Target::gpu);
  if (obj->type == HWLOC_OBJ_PACKAGE) return std::make_pair("package" + std::to_string(obj->os_index), NvLink::Target::cpu);
  return std::nullopt;
}

// Every NVLinkBandwidth matrix hwloc holds (one per NVLink domain on large machines). A GPU in one
// has known NVLinks, even if it has none.
void read_nvlinks_from_hwloc(hwloc_topology_t t, NodeTopology& topo) {
  unsigned nr = 0;
  if (hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, nullptr, 0) != 0 || nr == 0) return;
  std::vector<hwloc_distances_s*> dists(nr);
  if (hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, dists.data(), 0) != 0) return;
  std::map<std::string, Gpu*> by_bus;
  for (auto& g : topo.gpus) by_bus[g.pci.bus_id] = &g;
  for (unsigned d = 0; d < std::min<std::size_t>(nr, dists.size()); ++d) {
    const hwloc_distances_s* m = dists[d];
    for (unsigned i = 0; i < m->nbobjs; ++i) {
      auto from = nvlink_endpoint(m->objs[i]);
      if (!from || !by_bus.count(from->first)) continue;
      by_bus[from->first]->nvlinks_known = true;
      for (unsigned j = 0; j < m->nbobjs; ++j) {
        auto to = nvlink_endpoint(m->objs[j]);
        if (i == j || !to) continue;
        if (unsigned n = links_from_bandwidth(m->values[i * m->nbobjs + j]))
          by_bus[from->first]->nvlinks.push_back({to->first, by_bus.count(to->first) ? NvLink::Target::gpu : to->second, n});
      }
    }
    hwloc_distances_release(t, dists[d]);
  }
}

void merge_nvml(const NvmlReport& nvml, NodeTopology& topo) {
  std::map<std::string, Gpu*> by_bus;
  for (auto& g : topo.gpus) by_bus[g.pci.bus_id] = &g;
  for (const auto& n : nvml.gpus) {
    auto it = by_bus.find(n.bus_id);
    if (it == by_bus.end()) continue;
    Gpu& g = *it->second;
    if (!n.name.empty()) g.model = n.name;
    if (n.memory_bytes) g.memory_bytes = n.memory_bytes;
    g.minor = n.minor;
    g.nvlinks_known = true;
    if (!n.nvlink_remote_bus_ids.empty()) g.nvlinks.clear();
    std::map<std::string, unsigned> counts;
    for (const auto& remote : n.nvlink_remote_bus_ids) ++counts[remote];
    for (const auto& [remote, count] : counts) {
      auto target = by_bus.count(remote) ? NvLink::Target::gpu : NvLink::Target::nvswitch;
      g.nvlinks.push_back({remote, target, count});
    }
  }
}

TopologyHandle load_hwloc(const DiscoveryOptions& options) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw TopologyError("hwloc_topology_init failed: out of memory");
  TopologyHandle t(raw, &hwloc_topology_destroy);
  hwloc_topology_set_io_types_filter(t.get(), HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (options.hwloc_xml) {
    const auto& path = *options.hwloc_xml;
    std::ifstream probe(path);
    if (!probe)
      throw TopologyError("cannot read hwloc XML '" + path.string() + "': " + std::strerror(errno) +
                          " (export one with 'lstopo --of xml FILE' on the node)");
    screen_hwloc_xml(path);
    if (hwloc_topology_set_xml(t.get(), path.c_str()) != 0 || hwloc_topology_load(t.get()) != 0)
      throw TopologyError("'" + path.string() +
                          "' is not a valid hwloc 2.x XML export (truncated or damaged?); regenerate it with "
                          "'lstopo --of xml FILE' on the node");
    return t;
  }
  if (options.sysfs_root && *options.sysfs_root != "/") {
    if (!std::filesystem::is_directory(*options.sysfs_root / "sys"))
      throw TopologyError("sysfs root '" + options.sysfs_root->string() + "' has no sys/ folder");
    // hwloc's linux component reads /sys and /proc below HWLOC_FSROOT.
    setenv("HWLOC_FSROOT", options.sysfs_root->c_str(), 1);
    // These components ask the machine we run on, not the tree: x86 its CPU (cpuid: vendor, caches),
    // opencl and gl its drivers and displays. Their answers would describe this machine instead of the
    // one the tree was taken from (and loading this machine's OpenCL drivers is slow besides).
    for (const char* here : {"x86", "opencl", "gl"})
      hwloc_topology_set_components(t.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, here);
  }
  int rc = hwloc_topology_load(t.get());
  if (options.sysfs_root && *options.sysfs_root != "/") unsetenv("HWLOC_FSROOT");
  if (rc != 0) throw TopologyError(std::string("hwloc could not read this machine's topology: ") + std::strerror(errno));
  return t;
}

std::string nccl_arch(const std::string& hwloc_arch) {
  if (hwloc_arch == "aarch64") return "arm64";
  if (hwloc_arch.rfind("ppc64", 0) == 0) return "ppc64";
  return hwloc_arch.empty() ? "x86_64" : hwloc_arch;
}

// A device whose bus is outside its parent bridge's bus range is not where the export says (a bus id
// missing from the export reads as 0000:00:00.0): named, so its pairing is not trusted blindly.
void note_bus_outside_bridge(hwloc_obj_t dev, const char* what, NodeTopology& topo) {
  hwloc_obj_t parent = dev->parent;
  if (!parent || parent->type != HWLOC_OBJ_BRIDGE || parent->attr->bridge.downstream_type != HWLOC_OBJ_BRIDGE_PCI) return;
  const auto& range = parent->attr->bridge.downstream.pci;
  const auto& p = dev->attr->pcidev;
  if (p.domain == range.domain && p.bus >= range.secondary_bus && p.bus <= range.subordinate_bus) return;
  char buses[32];
  std::snprintf(buses, sizeof buses, "%04x:[%02x-%02x]", range.domain, range.secondary_bus, range.subordinate_bus);
  std::string bridge = parent->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI ? "bridge " + bus_id(parent->attr->bridge.upstream.pci)
                                                                                  : std::string("host bridge");
  topo.notes.push_back(std::string(what) + " " + bus_id(p) + " is outside the bus range " + buses + " of its " + bridge +
                       ": its bus id is missing or wrong in the export, and its PCIe path may be too");
}

void refuse_duplicate_bus_ids(const NodeTopology& topo) {
  std::set<std::string> seen;
  auto claim = [&](const std::string& bus, const char* what) {
    if (!seen.insert(bus).second)
      throw TopologyError(std::string("two devices claim PCI bus id ") + bus + " (the second a " + what +
                          "): a damaged or hand-edited export; regenerate it with 'lstopo --of xml FILE' on the node");
  };
  for (const auto& g : topo.gpus) claim(g.pci.bus_id, "GPU");
  for (const auto& n : topo.nics) claim(n.pci.bus_id, "NIC");
}

// An export and a /sys tree of two machines would be merged into a node that does not exist.
void refuse_other_machines_tree(const DiscoveryOptions& o, const std::string& export_host, const SysfsReader& sysfs,
                                const std::set<std::string>& export_pci, const NodeTopology& topo) {
  auto refuse = [&](const std::string& why) {
    throw TopologyError("the /sys tree '" + o.sysfs_root->string() + "' is not of the machine in '" + o.hwloc_xml->string() + "': " + why +
                        "; take both on the same node (lstopo --of xml FILE, and the /sys tree)");
  };
  std::string recorded = sysfs.recorded_hostname();
  if (!recorded.empty() && !export_host.empty() && common::short_name(recorded) != common::short_name(export_host))
    refuse("it records host '" + recorded + "', the export '" + export_host + "'");
  auto listed = sysfs.pci_devices();
  std::set<std::string> in_tree(listed.begin(), listed.end());
  if (!in_tree.empty()) {
    for (const auto& g : topo.gpus)
      if (!in_tree.count(g.pci.bus_id)) refuse("the export's GPU " + g.pci.bus_id + " is not in its sys/bus/pci/devices");
    for (const auto& n : topo.nics)
      if (!in_tree.count(n.pci.bus_id)) refuse("the export's NIC " + n.pci.bus_id + " is not in its sys/bus/pci/devices");
  }
  for (const auto& [device, bus] : sysfs.rdma_device_functions())
    if (!export_pci.count(bus)) refuse("its RDMA device " + device + " is at " + bus + ", which the export does not have");
}

std::string node_name(const DiscoveryOptions& o, hwloc_obj_t root, const std::optional<SysfsReader>& sysfs) {
  if (o.hostname) return common::short_name(*o.hostname);
  if (o.hwloc_xml) return common::short_name(info(root, "HostName"));
  if (o.sysfs_root && *o.sysfs_root != "/") {
    std::string recorded = sysfs->recorded_hostname();
    if (recorded.empty())
      throw TopologyError("the /sys tree '" + o.sysfs_root->string() + "' does not record which machine it is (no proc/sys/kernel/hostname or "
                          "etc/hostname in it); name it with --hostname NAME");
    return common::short_name(recorded);
  }
  return common::short_hostname();
}

}  // namespace

NodeTopology discover(const DiscoveryOptions& options) {
  TopologyHandle handle = load_hwloc(options);
  hwloc_topology_t t = handle.get();
  HwlocReader reader(t);
  NodeTopology topo;

  hwloc_obj_t root = hwloc_get_root_obj(t);
  bool live = !options.hwloc_xml;
  std::optional<SysfsReader> sysfs;
  if (options.sysfs_root) sysfs.emplace(*options.sysfs_root);
  else if (live) sysfs.emplace("/");
  topo.hostname = node_name(options, root, sysfs);
  topo.cpu.arch = nccl_arch(info(root, "Architecture"));
  hwloc_obj_t package = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
  topo.cpu.vendor = info(package, "CPUVendor");
  topo.cpu.family = info(package, "CPUFamilyNumber");
  topo.cpu.model = info(package, "CPUModelNumber");
  topo.cpu.model_name = info(package, "CPUModel");
  topo.cpu.model_name.erase(topo.cpu.model_name.find_last_not_of(' ') + 1);
  topo.packages = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE)));
  topo.cores = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE)));
  topo.pus = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU)));

  for (hwloc_obj_t numa = nullptr; (numa = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, numa));)
    topo.numa_nodes.push_back({numa->os_index, bitmap_list(numa->cpuset), cpumap(numa->cpuset, reader.last_cpu()),
                               numa->attr->numanode.local_memory});

  std::set<std::string> pci_bus_ids;
  for (hwloc_obj_t dev = nullptr; (dev = hwloc_get_next_pcidev(t, dev));) {
    const auto& p = dev->attr->pcidev;
    pci_bus_ids.insert(bus_id(p));
    if (is_gpu(p)) {
      topo.gpus.push_back(read_gpu(reader, dev));
      note_bus_outside_bridge(dev, "GPU", topo);
    } else if (is_nvswitch(dev)) {
      topo.nvswitch_bus_ids.push_back(bus_id(p));
    } else if (is_nic(p)) {
      Nic nic = read_nic(reader, dev);
      // SR-IOV virtual functions and unbound functions have no OS device: nothing to hand to NCCL/UCX.
      if (!nic.name.empty() || options.sysfs_root || !options.hwloc_xml) {
        topo.nics.push_back(std::move(nic));
        note_bus_outside_bridge(dev, "NIC", topo);
      }
    }
  }
  auto by_bus = [](const auto& a, const auto& b) { return a.pci.bus_id < b.pci.bus_id; };
  std::sort(topo.gpus.begin(), topo.gpus.end(), by_bus);
  std::sort(topo.nics.begin(), topo.nics.end(), by_bus);
  refuse_duplicate_bus_ids(topo);
  read_nvlinks_from_hwloc(t, topo);

  if (sysfs) {
    if (options.hwloc_xml) refuse_other_machines_tree(options, info(root, "HostName"), *sysfs, pci_bus_ids, topo);
    for (auto& nic : topo.nics) enrich_from_sysfs(nic, *sysfs);
    std::erase_if(topo.nics, [](const Nic& n) { return n.name.empty(); });
    topo.gpudirect_rdma = sysfs->gpudirect_rdma_module();
  }
  for (unsigned i = 0; i < topo.gpus.size(); ++i) {
    topo.gpus[i].index = i;
    topo.gpus[i].minor = sysfs ? sysfs->nvidia_minor(topo.gpus[i].pci.bus_id).value_or(i) : i;
  }
  // NVML describes the machine we run on, which a /sys snapshot is not.
  bool this_machine = live && (!options.sysfs_root || *options.sysfs_root == "/");
  if (this_machine && options.use_nvml && !topo.gpus.empty()) {
    NvmlReport nvml = query_nvml();
    if (nvml.available) merge_nvml(nvml, topo);
    else topo.notes.push_back("NVML: " + nvml.why_not + "; GPU names and memory come from PCI ids");
  }
  if (topo.gpus.empty()) topo.notes.push_back("no GPU found");
  if (topo.nics.empty()) topo.notes.push_back("no physical NIC found");
  return topo;
}

}  // namespace cnet::topology
