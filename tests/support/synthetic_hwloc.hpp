#pragma once
// Synthetic hwloc 2.x XML exports for machines the real-machine fixtures do not cover: several NUMA
// nodes per package (AMD NPS2/NPS4, Intel SNC), PCIe switches, DOWN ports, multi-function cards, and
// thousands of GPUs. The bitmaps are written by hwloc itself, and every export is meant to be loaded
// back through hwloc (cnet's discovery does), which rejects an inconsistent one.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cnet::testing {

struct SyntheticFunction {
  enum class Kind { gpu, nic } kind = Kind::gpu;
  std::uint32_t class_id = 0x0302;
  std::uint16_t vendor = 0x10de, device = 0x20b2, subvendor = 0x10de, subdevice = 0x1463;
  std::string pci_name;      // hwloc's PCIDevice info ("GA100 [A100 SXM4 80GB]"); "" none
  std::string gpu_model;     // a CUDA OS device's GPUModel ("NVIDIA A100-SXM4-80GB"); "" no OS device
  std::string rdma_device;   // an OpenFabrics OS device ("mlx5_0"); "" none
  std::string netdev;        // a network OS device ("ib0"); "" none
  std::string port_state = "4";  // Port1State: 4 ACTIVE, 1 DOWN
  std::string node_guid, sys_image_guid;
  std::string bus_id;        // set by the layout: "dddd:bb:dd.f"
  float link_gbytes_per_s = 24.6f;  // Gen4 x16
};

SyntheticFunction synthetic_gpu(std::string model = "NVIDIA A100-SXM4-80GB");
// An IB HCA function (class 0x0207) with its mlx5 device and IPoIB netdev; state "4" ACTIVE, "1" DOWN.
SyntheticFunction synthetic_hca(std::string rdma_device, std::string netdev, std::string port_state = "4");
// A RoCE function (Ethernet class 0x0200) with its mlx5 device and Ethernet netdev.
SyntheticFunction synthetic_roce(std::string rdma_device, std::string netdev);

// One PCIe root port. Behind a switch, each function sits under its own downstream port; without one
// the functions are functions 0..n-1 of one card.
struct SyntheticSlot {
  std::vector<SyntheticFunction> functions;
  bool behind_switch = false;
};

struct SyntheticNuma {
  unsigned cores = 4;  // one PU each
  std::vector<SyntheticSlot> slots;  // all under one host bridge, in PCI domain = NUMA node index
};

struct SyntheticMachine {
  std::string hostname = "node1";
  std::string xml_version = "2.0";
  unsigned packages = 1;
  std::vector<SyntheticNuma> numa;  // package p holds numa[p*k .. p*k+k-1], k = numa.size()/packages
};

// The export, bus ids assigned in order (domain = NUMA node, one bus range per slot).
std::string synthetic_hwloc_xml(const SyntheticMachine& machine);
// `nodes` NUMA nodes on `packages` packages, each NUMA node with `gpus_per_numa` GPUs and
// `hcas_per_numa` HCAs behind one switch: a scaled-out machine for benchmarks.
SyntheticMachine synthetic_scaled_machine(unsigned packages, unsigned numa_per_package, unsigned gpus_per_numa,
                                          unsigned hcas_per_numa, unsigned cores_per_numa);
void write_synthetic_hwloc(const SyntheticMachine& machine, const std::filesystem::path& path);

}  // namespace cnet::testing
