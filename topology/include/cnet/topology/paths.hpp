#pragma once
// How two devices are connected, in the vocabulary of `nvidia-smi topo -m` and NCCL, and which NIC
// each GPU should use.

#include <string>
#include <vector>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

// Ordered from closest to farthest; NV is compared by link count separately.
enum class PathLevel { self, nvlink, pix, pxb, phb, node, sys };

struct PathClass {
  PathLevel level = PathLevel::sys;
  unsigned nvlinks = 0;  // for nvlink
  std::string label() const;  // "X", "NV6", "PIX", "PXB", "PHB", "NODE", "SYS"
};

// PCIe/NUMA distance between two located devices (ignores NVLink).
PathLevel pci_path_level(const Locality& a, const Locality& b);
PathClass classify(const Gpu& a, const Gpu& b);
PathClass classify(const Gpu& gpu, const Nic& nic);

// Number of NVLinks between two GPUs, direct or through NVSwitches (the smaller side's switch links).
unsigned nvlinks_between(const Gpu& a, const Gpu& b);

struct GpuNicPair {
  unsigned gpu = 0;       // Gpu::index
  int nic = -1;           // index into NodeTopology::nics, -1 when the node has no usable NIC
  PathClass path;
};

// Each GPU's closest NIC: lowest path level first, then the NIC used by fewer GPUs so far (NICs are
// shared evenly), then an ACTIVE port, then the higher rate, then the lower bus id. RDMA NICs are
// preferred whenever the node has any.
std::vector<GpuNicPair> pair_gpus_with_nics(const NodeTopology& topo);

}  // namespace cnet::topology
