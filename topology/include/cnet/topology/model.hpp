#pragma once
// The plain data model of one node's topology: what discovery fills and every emitter reads.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnet::topology {

class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One hop on the PCIe path from the CPU down to a device: a host bridge or a PCI-PCI bridge.
struct PciHop {
  std::uint64_t id = 0;       // unique within the topology (hwloc gp_index)
  bool host_bridge = false;   // root complex: crossing it means going through the CPU
  std::string bus_id;         // "0000:32:00.0"; empty for host bridges
  std::uint32_t class_id = 0; // 0x0604 for bridges/switch ports
  std::uint16_t vendor_id = 0, device_id = 0, subvendor_id = 0, subdevice_id = 0;
  float link_gbytes_per_s = 0;
};

// Where a device sits: its PCIe path and the CPUs/NUMA node closest to it.
struct Locality {
  std::vector<PciHop> pci_path;  // from the host bridge down to the device's parent bridge
  int numa_node = -1;            // OS index of the closest NUMA node, -1 unknown
  int package = -1;              // OS index of the CPU package (socket) it hangs off, -1 unknown or several
  std::string nodeset;           // NUMA nodes of the closest CPU-side object, as a list ("0" or "0-1")
  std::string cpuset;            // its PUs as a list, e.g. "0-11,24-35" (OS indexes)
  std::string cpumask;           // the same as a Linux cpumap ("00000000,00ffffff"), NCCL's affinity format
  std::vector<unsigned> cores;   // logical core indexes of the closest CPU-side object
  // The logical cores of its whole package (empty when unknown): gres.conf's Cores=, since Slurm 23.02
  // refuses a range that covers part of a socket (a node with NUMA-node ranges on NPS4 goes INVAL).
  std::vector<unsigned> package_cores;
};

struct PciIdentity {
  std::string bus_id;  // lowercase "dddd:bb:dd.f"
  std::uint32_t class_id = 0;  // 16-bit class, 0x0302
  std::uint16_t vendor_id = 0, device_id = 0, subvendor_id = 0, subdevice_id = 0;
  float link_gbytes_per_s = 0;
};

struct NvLink {
  std::string target_bus_id;  // peer GPU, NVSwitch or CPU
  enum class Target { gpu, nvswitch, cpu } target = Target::gpu;
  unsigned count = 0;         // number of links
};

struct Gpu {
  unsigned index = 0;  // position in PCI bus id order (Slurm's and nvidia-smi's order)
  unsigned minor = 0;  // /dev/nvidia<minor>
  PciIdentity pci;
  std::string vendor;  // "NVIDIA", "AMD"
  std::string model;   // "Tesla V100-SXM3-32GB-H"
  std::uint64_t memory_bytes = 0;  // 0 unknown
  Locality locality;
  std::vector<NvLink> nvlinks;
  bool nvlinks_known = false;      // NVML or hwloc reported this GPU's NVLinks; else "none" is unknown
};

enum class NicKind { ib, roce, eth };

struct Nic {
  std::string name;         // RDMA device ("mlx5_0") if any, else the netdev ("eth0")
  std::string netdev;       // "ib0", "eth0"; empty if none
  std::string rdma_device;  // "mlx5_0"; empty for plain Ethernet
  std::string verbs_device; // "uverbs1": its /dev/infiniband node (gres.conf File=); empty unknown
  NicKind kind = NicKind::eth;
  unsigned port = 1;
  std::string state;        // "ACTIVE", "DOWN", "INIT", ... for RDMA ports; "up"/"down" for netdevs; "" unknown
  unsigned rate_gbps = 0;   // negotiated rate, 0 unknown
  unsigned lanes = 0;       // IB link width (4 for 4X), 0 unknown
  unsigned mtu = 0;         // netdev MTU, 0 unknown
  std::string guid;         // RDMA node GUID, "248a:0703:001e:39fe"
  std::string system_guid;  // the card's system image GUID, shared by its functions and ports; "" unknown
  PciIdentity pci;
  Locality locality;

  // An RDMA NIC: InfiniBand or RoCE with a verbs device (an IPoIB or plain Ethernet netdev is not).
  bool is_rdma() const { return kind != NicKind::eth && !rdma_device.empty(); }
};

struct NumaNode {
  unsigned os_index = 0;
  std::string cpuset;           // PUs as a list
  std::string cpumask;          // Linux cpumap format
  std::uint64_t memory_bytes = 0;
};

struct CpuIdentity {
  std::string arch = "x86_64";
  std::string vendor;           // "GenuineIntel"
  std::string family, model;    // numbers as text, "6" / "85"
  std::string model_name;
};

struct NodeTopology {
  std::string hostname;
  CpuIdentity cpu;
  unsigned packages = 0, cores = 0, pus = 0;
  std::vector<NumaNode> numa_nodes;
  std::vector<Gpu> gpus;  // sorted by PCI bus id
  std::vector<Nic> nics;  // sorted by PCI bus id
  std::vector<std::string> nvswitch_bus_ids;
  // What shows that NICs can read and write GPU memory directly (GPUDirect RDMA): the peer-memory
  // module seen ("nvidia_peermem", "nv_mem"); "" not established, which is not the same as "no".
  std::string gpudirect_rdma;
  std::vector<std::string> notes;  // what discovery could not read or found suspicious, for humans
};

const char* to_string(NicKind kind);

}  // namespace cnet::topology
