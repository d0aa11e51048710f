// Live discovery pointed at real /sys + /proc snapshots (hwloc's Linux test trees), as on those machines.
#include <gtest/gtest.h>

#include "cnet/topology/check.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/sysfs.hpp"

using namespace cnet::topology;

namespace {
const std::filesystem::path kSnapshots = CNET_SYSFS_SNAPSHOTS;
NodeTopology live_at(const std::string& name) {
  DiscoveryOptions o;
  o.sysfs_root = kSnapshots / name;
  o.hostname = "snapshot";  // these trees do not record their machine's name
  return discover(o);
}
}  // namespace

// 4 sockets x 10 cores, Ethernet plus a QLogic InfiniBand HCA (qib0, 4X QDR).
TEST(SysfsSnapshot, QlogicInfinibandNode) {
  NodeTopology t = live_at("40intel64-2g2n4c+pci");
  EXPECT_EQ(t.pus, 40u);
  EXPECT_EQ(t.numa_nodes.size(), 4u);
  EXPECT_TRUE(t.gpus.empty());
  ASSERT_EQ(t.nics.size(), 5u);
  const Nic& ib = t.nics.back();
  EXPECT_EQ(ib.name, "qib0");
  EXPECT_EQ(ib.netdev, "ib0");
  EXPECT_EQ(ib.kind, NicKind::ib);
  EXPECT_EQ(ib.state, "ACTIVE");
  EXPECT_EQ(ib.rate_gbps, 40u);
  EXPECT_EQ(ib.lanes, 4u);
  EXPECT_EQ(ib.mtu, 2044u);
  EXPECT_EQ(ib.pci.bus_id, "0000:43:00.0");
  EXPECT_EQ(t.nics[0].name, "eth0");
  EXPECT_EQ(t.nics[0].state, "up");
  EXPECT_EQ(t.nics[1].state, "down");
  EXPECT_TRUE(check_links(t).empty());
  SysfsReader sysfs(kSnapshots / "40intel64-2g2n4c+pci");
  EXPECT_EQ(sysfs.rdma_devices_of_pci("0000:43:00.0"), std::vector<std::string>{"qib0"});
  // gres.conf must name the HCA's own uverbs node, which sysfs knows and hwloc does not.
  EXPECT_EQ(sysfs.verbs_device_of("qib0"), "uverbs0");
  EXPECT_EQ(ib.verbs_device, "uverbs0");
  EXPECT_NE(to_gres_conf(t).find("Name=rdma Type=qib0 File=/dev/infiniband/uverbs0"), std::string::npos) << to_gres_conf(t);
  EXPECT_EQ(from_json(to_json(t)).nics.back().verbs_device, "uverbs0");
}

// A VM whose NIC hangs off virtio, not a PCI function link.
TEST(SysfsSnapshot, VirtioVm) {
  NodeTopology t = live_at("2pa-pcidomain32bits");
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "ens3");
  EXPECT_EQ(t.nics[0].mtu, 1500u);
  // The snapshot's /proc/cpuinfo is a Skylake guest; the CPU running the test must not leak in.
  EXPECT_EQ(t.cpu.vendor, "GenuineIntel");
}

// A snapshot is not this machine: its name comes from the snapshot or --hostname, never gethostname().
TEST(SysfsSnapshot, NameComesFromTheSnapshotOrIsRequired) {
  DiscoveryOptions o;
  o.sysfs_root = kSnapshots / "2pa-pcidomain32bits";
  try {
    discover(o);
    FAIL() << "a snapshot without a recorded name was given this machine's name";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("--hostname NAME"), std::string::npos) << e.what();
  }
  o.hostname = "vm3.example.org";
  EXPECT_EQ(discover(o).hostname, "vm3");
}
