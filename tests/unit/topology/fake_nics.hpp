#pragma once
// NICs laid out in a scratch /sys and /proc tree as the kernel shows them: the netdev with its device
// (driver link, NUMA node, MSI vectors), its queues, the IRQs' CPU lists, and an RDMA device beside it.
#include <string>

#include "test_support.hpp"

namespace cnet::topology::testing {

struct FakeNic {
  std::string netdev = "eth0", driver = "mlx5_core";
  int numa_node = 0;
  unsigned queues = 8;
  unsigned first_irq = 100, irq_count = 8;
  std::string irq_cpus = "0-7";    // every vector's smp_affinity_list
  std::string rdma_device, firmware;  // "mlx5_0", its fw_ver
  unsigned speed_mbps = 100000;
};

inline void add_numa_node(const TempDir& d, int node, const std::string& cpulist) {
  d.write("sys/devices/system/node/node" + std::to_string(node) + "/cpulist", cpulist + "\n");
}

inline void add_nic(const TempDir& d, const FakeNic& n) {
  std::string net = "sys/class/net/" + n.netdev;
  std::string pci = "sys/devices/pci0000:00/0000:00:0" + std::to_string(n.first_irq % 10) + ".0/" + n.netdev;
  d.write(pci + "/numa_node", std::to_string(n.numa_node) + "\n");
  d.link(net + "/device", d.file(pci));
  d.link(pci + "/driver", d.file("sys/bus/pci/drivers/" + n.driver));
  d.write(net + "/speed", std::to_string(n.speed_mbps) + "\n");
  for (unsigned q = 0; q < n.queues; ++q) {
    d.write(net + "/queues/rx-" + std::to_string(q) + "/rps_cpus", "0\n");
    d.write(net + "/queues/tx-" + std::to_string(q) + "/xps_cpus", "0\n");
  }
  for (unsigned i = 0; i < n.irq_count; ++i) {
    std::string irq = std::to_string(n.first_irq + i);
    d.write(pci + "/msi_irqs/" + irq, "msix\n");
    d.write("proc/irq/" + irq + "/smp_affinity_list", n.irq_cpus + "\n");
  }
  if (!n.rdma_device.empty()) {
    std::string ib = "sys/class/infiniband/" + n.rdma_device;
    d.link(ib + "/device", d.file(pci));
    d.write(pci + "/net/" + n.netdev + "/ifindex", "3\n");
    d.write(ib + "/fw_ver", n.firmware + "\n");
  }
}

}  // namespace cnet::topology::testing
