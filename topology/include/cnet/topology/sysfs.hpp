#pragma once
// Reads what hwloc does not record about NICs (rate, link layer, MTU, state) from /sys, under a
// configurable root so tests can point it at a snapshot or a fake tree.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cnet::topology {

struct RdmaPortInfo {
  std::string state;       // "ACTIVE", "DOWN", ...
  std::string phys_state;  // "LinkUp", "Disabled", ...
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  unsigned rate_gbps = 0;
  unsigned lanes = 0;      // 4 for "(4X HDR)"
};

struct NetdevInfo {
  unsigned mtu = 0;
  unsigned speed_mbps = 0;  // 0 when down or unknown
  std::string operstate;    // "up", "down", ...
  std::string pci_bus_id;   // of the device link; empty for virtual interfaces
};

class SysfsReader {
 public:
  explicit SysfsReader(std::filesystem::path root = "/") : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }
  bool has_class_net() const;

  std::optional<RdmaPortInfo> rdma_port(const std::string& device, unsigned port) const;
  std::vector<unsigned> rdma_ports(const std::string& device) const;
  std::optional<NetdevInfo> netdev(const std::string& name) const;
  std::vector<std::string> netdevs() const;
  std::vector<std::string> rdma_devices() const;
  // The netdevs and RDMA devices that belong to a PCI function ("0000:05:00.0").
  std::vector<std::string> netdevs_of_pci(const std::string& bus_id) const;
  std::vector<std::string> rdma_devices_of_pci(const std::string& bus_id) const;
  // The uverbs node of an RDMA device ("uverbs1"), from its PCI device's infiniband_verbs/; "" if none.
  std::string verbs_device_of(const std::string& rdma_device) const;
  // The other way round: the RDMA device behind a uverbs node, from sys/class/infiniband_verbs/<n>/ibdev.
  std::string rdma_device_of_verbs(const std::string& verbs_device) const;
  // /proc/driver/nvidia/gpus/<bus id>/information "Device Minor:"
  std::optional<unsigned> nvidia_minor(const std::string& bus_id) const;
  // sys/class/infiniband/<dev>/sys_image_guid ("248a:0703:001e:39fe"), "" when absent.
  std::string rdma_system_guid(const std::string& rdma_device) const;
  // The peer-memory module that lets RDMA NICs reach GPU memory, checked where NCCL checks:
  // "nvidia_peermem", "nv_mem" or "nv_mem_nc"; "" when none is loaded.
  std::string gpudirect_rdma_module() const;
  // The machine's name as this tree records it (proc/sys/kernel/hostname, else etc/hostname); "" none.
  std::string recorded_hostname() const;
  // PCI functions the tree lists under sys/bus/pci/devices; empty when it has none.
  std::vector<std::string> pci_devices() const;
  // The PCI function each RDMA device belongs to, by device name.
  std::vector<std::pair<std::string, std::string>> rdma_device_functions() const;

 private:
  std::filesystem::path path(const std::string& rel) const { return root_ / rel; }
  std::filesystem::path root_;
};

// "200 Gb/sec (4X HDR)" -> {200, 4}; tolerant of "2.5 Gb/sec (1X SDR)".
std::pair<unsigned, unsigned> parse_ib_rate(const std::string& text);

}  // namespace cnet::topology
