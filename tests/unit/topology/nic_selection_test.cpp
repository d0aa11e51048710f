#include <gtest/gtest.h>

#include <map>

#include "cnet/topology/check.hpp"
#include "cnet/topology/nic_selection.hpp"

using namespace cnet::topology;

namespace {

Nic nic(const std::string& netdev, const std::string& rdma = "", unsigned mtu = 9000) {
  Nic n;
  n.netdev = netdev;
  n.rdma_device = rdma;
  n.name = rdma.empty() ? netdev : rdma;
  n.kind = rdma.empty() ? NicKind::eth : NicKind::ib;
  n.mtu = mtu;
  return n;
}

}  // namespace

// NCCL's grammar: items are prefixes unless the list starts with '=', a leading '^' excludes.
TEST(NicSelection, NcclItemsArePrefixesUnlessExact) {
  auto s = NicSelection::from_nccl("eth,ib0");
  EXPECT_TRUE(s.selects("eth0"));
  EXPECT_TRUE(s.selects("eth12"));
  EXPECT_TRUE(s.selects("ib0"));
  EXPECT_FALSE(s.selects("ib1"));
  auto exact = NicSelection::from_nccl("=eth0");
  EXPECT_TRUE(exact.selects("eth0"));
  EXPECT_FALSE(exact.selects("eth01"));
}

TEST(NicSelection, NcclCaretExcludesTheListedAndSelectsTheRest) {
  auto s = NicSelection::from_nccl("^docker,lo");
  EXPECT_FALSE(s.selects("docker0"));
  EXPECT_FALSE(s.selects("lo"));
  EXPECT_TRUE(s.selects("eth0"));
  auto exact = NicSelection::from_nccl("^=eth0");
  EXPECT_FALSE(exact.selects("eth0"));
  EXPECT_TRUE(exact.selects("eth01"));
  // An excluded netdev excludes its RDMA device too: both are one NIC.
  EXPECT_FALSE(NicSelection::from_nccl("^ib0").selects(nic("ib0", "mlx5_0")));
  EXPECT_TRUE(NicSelection::from_nccl("^ib0").selects(nic("ib1", "mlx5_1")));
}

TEST(NicSelection, UcxNamesDevicesExactlyWithoutPortsAndAllNamesNone) {
  auto s = NicSelection::from_ucx("mlx5_0:1,eth0");
  EXPECT_TRUE(s.selects(nic("ib0", "mlx5_0")));
  EXPECT_TRUE(s.selects("eth0"));
  EXPECT_FALSE(s.selects("eth01"));
  EXPECT_FALSE(s.selects("mlx5_1"));
  EXPECT_TRUE(NicSelection::from_ucx("all").empty()) << "UCX's default names no NIC in particular";
  EXPECT_FALSE(NicSelection::from_ucx("all").selects("all"));
  EXPECT_FALSE(NicSelection::from_ucx("^eth0").selects("eth0"));
  EXPECT_TRUE(NicSelection::from_ucx("^eth0").selects("eth1"));
  EXPECT_TRUE(NicSelection::from_nccl("").empty());
  EXPECT_TRUE(NicSelection::from_nccl("^").empty());
}

TEST(NicSelection, TheEnvironmentsVariablesTogether) {
  std::map<std::string, std::string> env = {{"NCCL_SOCKET_IFNAME", "^eth"}, {"UCX_NET_DEVICES", "eth1"}};
  auto s = NicSelection::from_environment([&](const char* var) -> const char* {
    auto it = env.find(var);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(s.selects("ib0"));    // not excluded by NCCL's list
  EXPECT_TRUE(s.selects("eth1"));   // named by UCX's
  EXPECT_FALSE(s.selects("eth0"));  // excluded by one, not named by the other
}

// The MTU check among a job's NICs: NCCL_SOCKET_IFNAME=^eth0 means "every NIC but eth0", so the
// management port eth0 with its 1500 is not compared with the fabric's 9000.
TEST(NicSelection, AnExcludedNicIsNotPartOfTheJobsFabric) {
  NodeTopology t;
  t.nics = {nic("eth0", "", 1500), nic("eth1", "", 9000), nic("eth2", "", 9000)};
  CheckOptions o;
  o.fabric = NicSelection::from_nccl("^eth0");
  for (const auto& f : check_links(t, o)) EXPECT_NE(f.aspect, "mtu") << f.problem;
  o.fabric = NicSelection::from_nccl("eth");
  bool mtu = false;
  for (const auto& f : check_links(t, o)) mtu = mtu || f.aspect == "mtu";
  EXPECT_TRUE(mtu) << "all three named: their MTUs differ";
}

// One predicate for "an RDMA NIC": a verbs device on InfiniBand or RoCE.
TEST(NicSelection, AnRdmaNicHasAVerbsDevice) {
  EXPECT_TRUE(nic("ib0", "mlx5_0").is_rdma());
  EXPECT_FALSE(nic("eth0").is_rdma());
  Nic ipoib = nic("ib0");
  ipoib.kind = NicKind::ib;  // an IPoIB netdev whose verbs device is not there
  EXPECT_FALSE(ipoib.is_rdma());
}
