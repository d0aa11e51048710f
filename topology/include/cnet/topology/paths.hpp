#pragma once
// How two devices are connected, in the vocabulary of `nvidia-smi topo -m` and NCCL, and which NIC
// each GPU should use.

#include <string>
#include <vector>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

// Ordered from closest to farthest; NV is compared by link count separately. `package` is what
// nvidia-smi folds into SYS: another NUMA node of the same CPU package (AMD NPS2/NPS4, Intel SNC),
// which is still closer than the other socket.
enum class PathLevel { self, nvlink, pix, pxb, phb, node, package, sys };

struct PathClass {
  PathLevel level = PathLevel::sys;
  unsigned nvlinks = 0;  // for nvlink
  std::string label() const;  // "X", "NV6", "PIX", "PXB", "PHB", "NODE", "PKG", "SYS"
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

// Whether a job can use the NIC: its RDMA port is ACTIVE or its netdev is up, or its state is not
// known. A DOWN, INIT or disabled port is never handed to a job.
bool usable(const Nic& nic);

// Each GPU's NIC: only usable NICs (a known-good state before an unknown one), then the lowest path
// level, then the NIC used by fewer GPUs so far (NICs are shared evenly), then the higher rate, then
// the lower bus id. RDMA NICs only, whenever the node has any; a GPU whose NICs are all down gets none.
std::vector<GpuNicPair> pair_gpus_with_nics(const NodeTopology& topo);

}  // namespace cnet::topology
