#include "cnet/topology/nic_settings.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "fake_nics.hpp"

using namespace cnet::topology;
using namespace cnet::topology::testing;

TEST(NicSettings, ReadFromARecordedTree) {
  TempDir d;
  add_numa_node(d, 0, "0-7");
  add_numa_node(d, 1, "8-15");
  FakeNic eth2;
  eth2.netdev = "eth2", eth2.numa_node = 1, eth2.queues = 4, eth2.first_irq = 40, eth2.irq_count = 3, eth2.irq_cpus = "8-15";
  eth2.rdma_device = "mlx5_0", eth2.firmware = "16.35.2000";
  add_nic(d, eth2);
  d.write("proc/irq/41/smp_affinity_list", "3\n");  // one vector moved to the other socket
  d.write("sys/class/net/lo/mtu", "65536\n");      // software interfaces have no device: not a NIC
  d.write("sys/class/infiniband/mlx5_1/fw_ver", "20.31.1014\n");  // an RDMA device without a netdev
  d.link("sys/class/infiniband/mlx5_1/device/driver", d.file("sys/bus/pci/drivers/mlx5_core"));

  EthtoolAnswers answers;
  answers.driver = "mlx5_core";
  answers.driver_version = "5.8-1.0.1";
  answers.rings = EthtoolAnswers::Rings{1024, 8192, 1024, 8192};
  answers.offloads = {{"gro", true}, {"tso", false}};
  std::vector<std::string> asked;
  auto nics = read_nic_settings(d.path().string(), [&](const std::string& n) {
    asked.push_back(n);
    return std::optional(answers);
  });
  EXPECT_EQ(asked, std::vector<std::string>{"eth2"});
  ASSERT_EQ(nics.size(), 2u);
  const NicSettings& e = nics[0];
  EXPECT_EQ(e.name(), "eth2");
  EXPECT_EQ(e.rdma_device, "mlx5_0");
  EXPECT_EQ(e.rx_queues, 4u);
  EXPECT_EQ(e.tx_queues, 4u);
  EXPECT_EQ(e.numa_node, 1);
  EXPECT_EQ(e.numa_cpus, (std::vector<unsigned>{8, 9, 10, 11, 12, 13, 14, 15}));
  ASSERT_EQ(e.irqs.size(), 3u);
  EXPECT_EQ(e.irqs[1].irq, 41u);
  EXPECT_EQ(e.irqs[1].cpus, std::vector<unsigned>{3});
  EXPECT_EQ(e.irqs[2].cpus.size(), 8u);
  EXPECT_EQ(e.speed_mbps, 100000u);
  ASSERT_TRUE(e.rings);
  EXPECT_EQ(e.rings->rx_max, 8192u);
  EXPECT_EQ(e.offloads.at("gro"), true);
  EXPECT_EQ(e.driver_summary(), "eth2 mlx5_core 5.8-1.0.1 firmware 16.35.2000");
  EXPECT_EQ(nics[1].name(), "mlx5_1");
  EXPECT_EQ(nics[1].driver_summary(), "mlx5_1 mlx5_core firmware 20.31.1014");
  EXPECT_EQ(driver_summaries(nics), "eth2 mlx5_core 5.8-1.0.1 firmware 16.35.2000; mlx5_1 mlx5_core firmware 20.31.1014");
  EXPECT_EQ(driver_summaries(nics, "mlx5_0:1"), "eth2 mlx5_core 5.8-1.0.1 firmware 16.35.2000") << "an RDMA port names its netdev's function";
  EXPECT_EQ(driver_summaries(nics, "eth9"), "");

  // What a child reads comes back whole: every field, the optional parts absent where they were.
  nics[0].channels = EthtoolAnswers::Channels{8, 63, 0, 0, 0, 0};
  auto back = nic_settings_from_json(nic_settings_to_json(nics));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(nic_settings_to_json(back), nic_settings_to_json(nics));
  EXPECT_EQ(back[0].irqs[1].cpus, std::vector<unsigned>{3});
  EXPECT_EQ(back[0].channels->combined_max, 63u);
  EXPECT_FALSE(back[1].rings);
  EXPECT_THROW(nic_settings_from_json("[{\"netdev\": 3}]"), std::runtime_error);
}

// A link measured over a veth (a container's or a network namespace's eth0) records the veth's driver:
// sysfs lists no NIC for it, ethtool still names the driver that carried the traffic.
TEST(NicSettings, MeasuredOverASoftwareInterface) {
  TempDir d;
  d.write("sys/class/net/eth0/mtu", "9000\n");  // no device link: software
  EthtoolAnswers veth;
  veth.driver = "veth", veth.driver_version = "1.0";
  EthtoolReader ethtool = [&](const std::string& n) -> std::optional<EthtoolAnswers> {
    if (n == "eth0") return veth;
    return std::nullopt;
  };
  auto nics = read_nic_settings(d.path().string(), ethtool);
  EXPECT_EQ(driver_summaries(nics, "eth0"), "") << "not a NIC to tune";
  EXPECT_EQ(measured_drivers(nics, "eth0", ethtool), "eth0 veth 1.0");
  EXPECT_EQ(measured_drivers(nics, "eth9", ethtool), "") << "an interface ethtool does not know";
  EXPECT_EQ(measured_drivers(nics, "", ethtool), "") << "all NICs: there are none";
}

TEST(NicSettings, DamagedOrMissingFilesAreUnknownNotErrors) {
  TempDir d;
  FakeNic eth0;
  eth0.irq_count = 2;
  add_nic(d, eth0);
  d.write("proc/irq/100/smp_affinity_list", "garbage\n");
  d.write("sys/devices/pci0000:00/0000:00:00.0/eth0/numa_node", "-1\n");
  std::filesystem::remove(d.path() / "sys/class/net/eth0/speed");
  auto nics = read_nic_settings(d.path().string(), {});
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].numa_node, -1);
  EXPECT_TRUE(nics[0].numa_cpus.empty());
  EXPECT_TRUE(nics[0].irqs[0].cpus.empty());
  EXPECT_EQ(nics[0].speed_mbps, 0u);
  EXPECT_FALSE(nics[0].rings);
  EXPECT_EQ(nics[0].driver, "mlx5_core") << "the sysfs driver link when ethtool is not asked";
  EXPECT_TRUE(read_nic_settings((d.path() / "nowhere").string(), {}).empty());
}

// The real ioctl on this machine: what the driver says agrees with the driver sysfs binds the device to.
TEST(NicSettings, LiveEthtoolAgreesWithSysfs) {
  EXPECT_FALSE(read_ethtool("nosuch-if0"));
  EXPECT_FALSE(read_ethtool("bad name with spaces and far too long"));
  auto lo = read_ethtool("lo");
  ASSERT_TRUE(lo) << "lo exists everywhere";
  for (const auto& nic : read_nic_settings("/", read_ethtool)) {
    if (nic.netdev.empty()) continue;
    std::error_code ec;
    auto bound = std::filesystem::read_symlink("/sys/class/net/" + nic.netdev + "/device/driver", ec);
    if (ec) continue;
    auto a = read_ethtool(nic.netdev);
    ASSERT_TRUE(a) << nic.netdev;
    if (!a->driver.empty()) {
      EXPECT_EQ(a->driver, bound.filename().string()) << nic.netdev;
    }
    if (a->rings) {
      EXPECT_LE(a->rings->rx, a->rings->rx_max) << nic.netdev;
    }
    EXPECT_EQ(nic.rx_queues > 0, std::filesystem::exists("/sys/class/net/" + nic.netdev + "/queues/rx-0")) << nic.netdev;
  }
}
