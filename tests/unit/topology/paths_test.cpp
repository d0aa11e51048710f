#include <gtest/gtest.h>

#include "cnet/topology/paths.hpp"

using namespace cnet::topology;

namespace {
PciHop host(std::uint64_t id) { return {id, true, "", 0, 0, 0, 0}; }
PciHop bridge(std::uint64_t id) { return {id, false, "0000:00:00." + std::to_string(id % 8), 0x0604, 0, 0, 0}; }
Locality at(std::vector<PciHop> path, std::string nodeset) {
  Locality l;
  l.pci_path = std::move(path);
  l.nodeset = std::move(nodeset);
  return l;
}
Gpu gpu(unsigned index, std::string bus, Locality loc) {
  Gpu g;
  g.index = index;
  g.pci.bus_id = std::move(bus);
  g.locality = std::move(loc);
  return g;
}
Nic nic(std::string name, NicKind kind, std::string bus, Locality loc) {
  Nic n;
  n.name = std::move(name);
  n.kind = kind;
  if (kind != NicKind::eth) n.rdma_device = n.name;  // as discovery names an RDMA NIC: by its verbs device
  n.pci.bus_id = std::move(bus);
  n.state = "ACTIVE";
  n.locality = std::move(loc);
  return n;
}
}  // namespace

// The levels of `nvidia-smi topo -m`: one switch PIX, nested switches PXB, same root complex PHB,
// another root complex on the same NUMA node NODE, another socket SYS.
TEST(PathLevel, FollowsNvidiaSmiVocabulary) {
  auto hb = host(1), rp = bridge(2), up = bridge(3), down_a = bridge(4), down_b = bridge(5);
  auto under_switch_a = at({hb, rp, up, down_a}, "0");
  auto under_switch_b = at({hb, rp, up, down_b}, "0");
  EXPECT_EQ(pci_path_level(under_switch_a, under_switch_b), PathLevel::pix);
  auto deeper = at({hb, rp, up, down_b, bridge(6), bridge(7)}, "0");
  EXPECT_EQ(pci_path_level(under_switch_a, deeper), PathLevel::pxb);
  auto other_root_port = at({hb, bridge(8)}, "0");
  EXPECT_EQ(pci_path_level(under_switch_a, other_root_port), PathLevel::phb);
  auto other_host_bridge_same_numa = at({host(9), bridge(10)}, "0");
  EXPECT_EQ(pci_path_level(under_switch_a, other_host_bridge_same_numa), PathLevel::node);
  auto other_socket = at({host(11), bridge(12)}, "1");
  EXPECT_EQ(pci_path_level(under_switch_a, other_socket), PathLevel::sys);
  EXPECT_EQ(pci_path_level(at({}, ""), at({}, "")), PathLevel::sys) << "unknown locality is never called close";
}

TEST(PathClass, NvlinkThroughSwitchesCountsTheSmallerSide) {
  auto a = gpu(0, "0000:01:00.0", at({host(1)}, "0")), b = gpu(1, "0000:02:00.0", at({host(1)}, "0"));
  a.nvlinks = {{"0000:10:00.0", NvLink::Target::nvswitch, 6}};
  b.nvlinks = {{"0000:10:00.0", NvLink::Target::nvswitch, 4}};
  EXPECT_EQ(classify(a, b).label(), "NV4");
  EXPECT_EQ(classify(a, a).label(), "X");
  b.nvlinks.clear();
  EXPECT_EQ(classify(a, b).label(), "PHB");
}

// Four GPUs, two per switch, one NIC per switch: each GPU takes the NIC under its own switch.
TEST(GpuNicPairing, PrefersTheNicUnderTheSameSwitch) {
  auto hb = host(1);
  auto sw0 = bridge(2), sw1 = bridge(3);
  NodeTopology topo;
  topo.gpus = {gpu(0, "0000:10:00.0", at({hb, sw0, bridge(20)}, "0")), gpu(1, "0000:11:00.0", at({hb, sw0, bridge(21)}, "0")),
               gpu(2, "0000:20:00.0", at({hb, sw1, bridge(30)}, "0")), gpu(3, "0000:21:00.0", at({hb, sw1, bridge(31)}, "0"))};
  topo.nics = {nic("mlx5_0", NicKind::ib, "0000:12:00.0", at({hb, sw0, bridge(22)}, "0")),
               nic("mlx5_1", NicKind::ib, "0000:22:00.0", at({hb, sw1, bridge(32)}, "0"))};
  auto pairs = pair_gpus_with_nics(topo);
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].nic, 0);
  EXPECT_EQ(pairs[1].nic, 0);
  EXPECT_EQ(pairs[2].nic, 1);
  EXPECT_EQ(pairs[3].nic, 1);
  EXPECT_EQ(pairs[0].path.label(), "PIX");
}

// Two equally distant NICs are shared evenly, a DOWN port loses to an ACTIVE one, and Ethernet is only
// used when the node has no RDMA NIC at all.
TEST(GpuNicPairing, SharesEvenlyAndPrefersActiveRdma) {
  auto hb = host(1);
  NodeTopology topo;
  topo.gpus = {gpu(0, "0000:10:00.0", at({hb, bridge(2)}, "0")), gpu(1, "0000:11:00.0", at({hb, bridge(3)}, "0"))};
  topo.nics = {nic("eth0", NicKind::eth, "0000:01:00.0", at({hb, bridge(2)}, "0")),
               nic("mlx5_0", NicKind::ib, "0000:30:00.0", at({hb, bridge(4)}, "0")),
               nic("mlx5_1", NicKind::ib, "0000:31:00.0", at({hb, bridge(5)}, "0"))};
  auto pairs = pair_gpus_with_nics(topo);
  EXPECT_EQ(topo.nics[pairs[0].nic].name, "mlx5_0");
  EXPECT_EQ(topo.nics[pairs[1].nic].name, "mlx5_1");
  topo.nics[1].state = "DOWN";
  pairs = pair_gpus_with_nics(topo);
  EXPECT_EQ(topo.nics[pairs[0].nic].name, "mlx5_1");
  topo.nics.erase(topo.nics.begin() + 1, topo.nics.end());
  pairs = pair_gpus_with_nics(topo);
  EXPECT_EQ(topo.nics[pairs[0].nic].name, "eth0");
  EXPECT_EQ(pairs[0].path.label(), "PIX");
  topo.nics.clear();
  EXPECT_EQ(pair_gpus_with_nics(topo)[0].nic, -1);
}
