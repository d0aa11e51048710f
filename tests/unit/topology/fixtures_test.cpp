// Facts about real machines (hwloc's own test exports), read off `lstopo --input F` by hand.
#include <gtest/gtest.h>

#include <algorithm>

#include "cnet/topology/discover.hpp"
#include "cnet/common/text.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/features.hpp"
#include "cnet/topology/paths.hpp"
#include "test_support.hpp"

using namespace cnet::topology;
using cnet::topology::testing::fixture;

namespace {
const auto load = cnet::topology::testing::load_fixture;
const Nic& nic_named(const NodeTopology& t, const std::string& name) {
  auto it = std::find_if(t.nics.begin(), t.nics.end(), [&](const Nic& n) { return n.name == name; });
  if (it == t.nics.end()) throw std::runtime_error("no NIC " + name);
  return *it;
}
}  // namespace

// DGX-2: 16 V100 behind two levels of PLX switches, 12 NVSwitches, 6 NVLinks per GPU.
TEST(Fixture, NvidiaDgx2) {
  NodeTopology t = load("nvidiaDGX2.xml");
  ASSERT_EQ(t.gpus.size(), 16u);
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.nvswitch_bus_ids.size(), 12u);
  EXPECT_EQ(t.gpus[0].pci.bus_id, "0000:34:00.0");
  EXPECT_EQ(t.gpus[0].model, "Tesla V100-SXM3-32GB-H");
  EXPECT_EQ(memory_class(t.gpus[0].memory_bytes), "gpumem32g");
  for (const auto& a : t.gpus)
    for (const auto& b : t.gpus)
      if (&a != &b) {
        EXPECT_EQ(classify(a, b).label(), "NV6") << a.index << "-" << b.index;
      }
  EXPECT_EQ(pci_path_level(t.gpus[0].locality, t.gpus[1].locality), PathLevel::pix) << "34:00 and 36:00 share a PLX";
  EXPECT_EQ(pci_path_level(t.gpus[0].locality, t.gpus[2].locality), PathLevel::pxb) << "39:00 is under the next PLX";
  EXPECT_EQ(pci_path_level(t.gpus[0].locality, t.gpus[8].locality), PathLevel::sys);
  EXPECT_EQ(t.gpus[0].locality.numa_node, 0);
  EXPECT_EQ(t.gpus[15].locality.numa_node, 1);
}

// POWER8 with 4 P100: NVLink 1 pairs (40 GB/s = 2 links) between GPU0-1 and GPU2-3, and to the CPU.
TEST(Fixture, Power8NvlinkPairs) {
  NodeTopology t = load("power8gpudistances.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.cpu.arch, "ppc64");
  EXPECT_EQ(classify(t.gpus[0], t.gpus[1]).label(), "NV2");
  EXPECT_EQ(classify(t.gpus[2], t.gpus[3]).label(), "NV2");
  EXPECT_EQ(classify(t.gpus[0], t.gpus[2]).label(), "SYS");
  EXPECT_EQ(t.gpus[0].pci.bus_id, "0002:01:00.0") << "PCI domains other than 0 are kept";
}

// 2-socket Xeon: a Tesla on socket 0, two on socket 1, one of them beside the ConnectX-4.
TEST(Fixture, XeonWithConnectX4) {
  NodeTopology t = load("32em64t-2n8c2t-pci-wholeio.xml");
  ASSERT_EQ(t.gpus.size(), 3u);
  const Nic& ib = nic_named(t, "mlx5_0");
  EXPECT_EQ(ib.kind, NicKind::ib);
  EXPECT_EQ(ib.state, "ACTIVE");
  EXPECT_EQ(ib.port, 1u);
  EXPECT_EQ(ib.guid, "248a:0703:001e:39fe");
  EXPECT_EQ(ib.netdev, "ib0");
  EXPECT_EQ(t.gpus[0].locality.numa_node, 0);
  EXPECT_EQ(cnet::common::compress_ranges(t.gpus[0].locality.cores), "0-7");
  EXPECT_EQ(t.gpus[2].pci.bus_id, "0000:84:00.0");
  auto pairs = pair_gpus_with_nics(t);
  EXPECT_EQ(t.nics[pairs[2].nic].name, "mlx5_0");
  EXPECT_EQ(pairs[2].path.label(), "PIX");
  EXPECT_EQ(pairs[1].path.label(), "PHB");
  EXPECT_EQ(pairs[0].path.label(), "SYS");
  EXPECT_EQ(t.gpus[0].model, "Tesla M2075 Dual-Slot Computing Processor Module");
  EXPECT_EQ(t.gpus[1].model, "Tesla M2075 Dual-Slot Computing Processor Module");
  EXPECT_EQ(t.gpus[2].model, "Tesla K40m") << "the CUDA/NVML model name wins over the PCI id name";
  EXPECT_EQ(memory_class(t.gpus[2].memory_bytes), "gpumem12g") << "from CUDAGlobalMemorySize (KiB)";
}

// Legacy ConnectX (class 0c06) with no OS-device infos, and GPUs without any OS device.
TEST(Fixture, LegacyInfinibandClass) {
  NodeTopology t = load("24em64t-2n6c2t-pci.xml");
  EXPECT_EQ(t.gpus.size(), 3u);
  const Nic& ib = nic_named(t, "mlx4_0");
  EXPECT_EQ(ib.kind, NicKind::ib);
  EXPECT_EQ(ib.netdev, "ib0");
  EXPECT_EQ(ib.state, "");
  EXPECT_EQ(gres_type(t.gpus[0].model), "nvidia_06d2") << "no model name: vendor and device id, still a valid Type";
}

// SR-IOV virtual functions have no OS device and are not NICs a job can be given.
TEST(Fixture, VirtualFunctionsAreNotNics) {
  NodeTopology t = load("16intel64-manyVFs.xml");
  std::vector<std::string> names;
  for (const auto& n : t.nics) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"eth0", "eth1", "usnic_0", "usnic_1", "usnic_2", "eth7"}));
}

TEST(Fixture, FourSocketsEightPorts) {
  NodeTopology t = load("96em64t-4n4d3ca2co-pci.xml");
  EXPECT_EQ(t.numa_nodes.size(), 4u);
  ASSERT_EQ(t.nics.size(), 8u);
  for (std::size_t i = 0; i < t.nics.size(); ++i) {
    EXPECT_EQ(t.nics[i].locality.numa_node, static_cast<int>(i / 2));
  }
}
