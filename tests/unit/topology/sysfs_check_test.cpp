#include <gtest/gtest.h>

#include "cnet/topology/check.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/sysfs.hpp"
#include "test_support.hpp"

using namespace cnet::topology;
using cnet::topology::testing::fixture;
using cnet::topology::testing::TempDir;

namespace {

// A /sys tree for the NICs of the 32em64t fixture (mlx5_0 at 04:00.0, eth0/eth1 at 81:00.0/.1).
void write_nic_tree(const TempDir& d, const std::string& ib_state, const std::string& ib_rate, int eth1_mtu) {
  const std::string pci = "../../../devices/pci0000:00/0000:00:03.0/";
  d.link("sys/class/infiniband/mlx5_0/device", pci + "0000:04:00.0");
  d.write("sys/class/infiniband/mlx5_0/ports/1/state", ib_state + "\n");
  d.write("sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
  d.write("sys/class/infiniband/mlx5_0/ports/1/rate", ib_rate + "\n");
  d.write("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
  d.link("sys/class/net/ib0/device", pci + "0000:04:00.0");
  d.write("sys/class/net/ib0/mtu", "4092\n");
  d.write("sys/class/net/ib0/operstate", "up\n");
  for (auto [name, fn, mtu] : {std::tuple{"eth0", "0", 9000}, std::tuple{"eth1", "1", eth1_mtu}}) {
    d.link(std::string("sys/class/net/") + name + "/device", pci + "0000:81:00." + fn);
    d.write(std::string("sys/class/net/") + name + "/mtu", std::to_string(mtu) + "\n");
    d.write(std::string("sys/class/net/") + name + "/speed", "10000\n");
    d.write(std::string("sys/class/net/") + name + "/operstate", "up\n");
  }
}

NodeTopology discover_with(const TempDir& d) {
  DiscoveryOptions o;
  o.hwloc_xml = fixture("hwloc/32em64t-2n8c2t-pci-wholeio.xml");
  o.sysfs_root = d.path();
  return discover(o);
}

bool has_finding(const std::vector<Finding>& fs, const std::string& subject, const std::string& text) {
  for (const auto& f : fs)
    if (f.subject == subject && f.problem.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(Sysfs, ReadsRateStateMtuAndLinks) {
  TempDir d;
  write_nic_tree(d, "4: ACTIVE", "200 Gb/sec (4X HDR)", 9000);
  d.write("sys/class/net/down0/speed", "-1\n");
  SysfsReader sysfs(d.path());
  auto port = sysfs.rdma_port("mlx5_0", 1);
  ASSERT_TRUE(port);
  EXPECT_EQ(port->state, "ACTIVE");
  EXPECT_EQ(port->rate_gbps, 200u);
  EXPECT_EQ(port->lanes, 4u);
  EXPECT_EQ(sysfs.rdma_devices_of_pci("0000:04:00.0"), std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(sysfs.netdevs_of_pci("0000:81:00.1"), std::vector<std::string>{"eth1"});
  EXPECT_EQ(sysfs.netdev("down0")->speed_mbps, 0u) << "a down link reports -1; that is 'unknown', not 4 billion";
  EXPECT_FALSE(sysfs.rdma_port("mlx5_0", 2));
  EXPECT_FALSE(sysfs.netdev("nonexistent"));
}

TEST(Check, HealthyNicsOnlyFlagTheGpuWithoutALocalNic) {
  TempDir d;
  write_nic_tree(d, "4: ACTIVE", "100 Gb/sec (4X EDR)", 9000);
  NodeTopology topo = discover_with(d);
  const Nic* ib = nullptr;
  for (const auto& n : topo.nics)
    if (n.name == "mlx5_0") ib = &n;
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->kind, NicKind::ib);
  EXPECT_EQ(ib->rate_gbps, 100u);
  EXPECT_EQ(ib->mtu, 4092u);
  auto findings = check_links(topo);
  ASSERT_EQ(findings.size(), 1u) << findings.front().problem;
  EXPECT_TRUE(has_finding(findings, "GPU0", "no usable NIC on the package (socket) of GPU0")) << "GPU 03:00.0 sits on socket 0, every NIC on socket 1";
  EXPECT_EQ(findings.front().kind, FindingKind::placement) << "a placement property, not a fault of a link";
}

TEST(Check, FlagsDownPortDegradedWidthAndMtuMismatch) {
  TempDir d;
  write_nic_tree(d, "1: DOWN", "50 Gb/sec (2X EDR)", 1500);
  auto findings = check_links(discover_with(d));
  EXPECT_TRUE(has_finding(findings, "mlx5_0", "is DOWN, not ACTIVE"));
  EXPECT_TRUE(has_finding(findings, "mlx5_0", "2X"));
  EXPECT_FALSE(has_finding(findings, "eth", "eth1=1500")) << "Ethernet ports beside the RDMA fabric are not compared";
  CheckOptions tcp;
  tcp.tcp_fabric = true;  // a job on Ethernet: then they are its fabric
  findings = check_links(discover_with(d), tcp);
  EXPECT_TRUE(has_finding(findings, "eth", "eth0=9000"));
  EXPECT_TRUE(has_finding(findings, "eth", "eth1=1500"));
  // The only HCA is down: no GPU has a usable NIC, a fault of this node's links like the port itself.
  EXPECT_TRUE(has_finding(findings, "GPU2", "no usable NIC for GPU2 (0000:84:00.0): mlx5_0 (DOWN)"));
  for (const auto& f : findings) {
    EXPECT_EQ(f.kind, FindingKind::link_fault) << f.problem;
    if (f.subject == "eth") {
      EXPECT_EQ(f.aspect, "mtu");
    }
  }
  CheckOptions named;
  named.fabric = NicSelection::exactly({"eth0"});  // a site's list of the NICs jobs use: one NIC agrees with itself
  EXPECT_FALSE(has_finding(check_links(discover_with(d), named), "eth", "MTU"));
  CheckOptions strict;
  strict.min_rate_gbps = 100;
  EXPECT_TRUE(has_finding(check_links(discover_with(d), strict), "mlx5_0", "below the expected 100"));
}

// GPUDirect RDMA is claimed in the NCCL file only when the peer-memory module NCCL looks for is loaded.
TEST(Check, GpuDirectOnlyWhereThePeerMemoryModuleIsSeen) {
  TempDir d;
  write_nic_tree(d, "4: ACTIVE", "100 Gb/sec (4X EDR)", 9000);
  std::string xml = to_nccl_xml(discover_with(d));
  EXPECT_EQ(xml.find("gdr=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"eth0\" dev=\"1\" speed=\"10000\" port=\"1\" gdr=\"0\""), std::string::npos) << "a socket NIC never has it:\n" << xml;
  d.write("sys/module/nvidia_peermem/version", "535.104.05\n");
  NodeTopology t = discover_with(d);
  EXPECT_EQ(t.gpudirect_rdma, "nvidia_peermem");
  xml = to_nccl_xml(t);
  EXPECT_NE(xml.find("<net name=\"mlx5_0\" dev=\"0\" speed=\"100000\" port=\"1\" guid=\"0xfe391e0003078a24\" gdr=\"1\"/>"), std::string::npos) << xml;
}

// An export and a /sys tree of two machines are refused, not merged into a node that does not exist.
TEST(Check, ATreeOfAnotherMachineIsRefused) {
  auto refused = [](const TempDir& d) -> std::string {
    try {
      discover_with(d);
    } catch (const TopologyError& e) {
      return e.what();
    }
    return "";
  };
  TempDir same;
  write_nic_tree(same, "4: ACTIVE", "100 Gb/sec (4X EDR)", 9000);
  same.write("proc/sys/kernel/hostname", "conan.example.org\n");
  EXPECT_EQ(refused(same), "") << "the export's own host, named in full";

  TempDir other_name;
  write_nic_tree(other_name, "4: ACTIVE", "100 Gb/sec (4X EDR)", 9000);
  other_name.write("etc/hostname", "gpu17\n");
  EXPECT_NE(refused(other_name).find("it records host 'gpu17', the export 'conan'"), std::string::npos) << refused(other_name);

  TempDir other_devices;
  write_nic_tree(other_devices, "4: ACTIVE", "100 Gb/sec (4X EDR)", 9000);
  other_devices.link("sys/class/infiniband/mlx5_3/device", "../../../devices/pci0000:00/0000:00:02.0/0000:21:00.0");
  EXPECT_NE(refused(other_devices).find("its RDMA device mlx5_3 is at 0000:21:00.0, which the export does not have"), std::string::npos)
      << refused(other_devices);
}
