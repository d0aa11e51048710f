#pragma once
// What a NIC's driver is set to, beside what the NIC is: RX/TX queues and ring sizes (current and the
// hardware's maximum), where its interrupts are bound against its NUMA node, the driver, its version and
// the firmware, and the offloads that change how traffic is cut up (GRO/GSO/TSO/LRO). Read from sysfs and
// /proc under a root (a recorded tree in tests) and from the driver through the ethtool ioctl (no
// `ethtool` binary needed); nodes are compared on them and a link baseline records them.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cnet::topology {

// What the ethtool ioctl answers for one interface; each part is absent when the driver does not say.
struct EthtoolAnswers {
  std::string driver, driver_version, firmware;  // ETHTOOL_GDRVINFO
  struct Rings {
    unsigned rx = 0, rx_max = 0, tx = 0, tx_max = 0;
  };
  std::optional<Rings> rings;                    // ETHTOOL_GRINGPARAM
  struct Channels {
    unsigned combined = 0, combined_max = 0, rx = 0, rx_max = 0, tx = 0, tx_max = 0;
  };
  std::optional<Channels> channels;              // ETHTOOL_GCHANNELS
  std::map<std::string, bool> offloads;          // "gro", "gso", "tso", "lro": on/off
};

// One interface's IRQ (an MSI/MSI-X vector of its PCI function) and the CPUs it may run on.
struct IrqBinding {
  unsigned irq = 0;
  std::vector<unsigned> cpus;  // /proc/irq/N/smp_affinity_list; empty: not readable
};

struct NicSettings {
  std::string netdev;             // "eth0", "ib0"; empty for an RDMA device without one
  std::string rdma_device;        // "mlx5_0" when the function is also an RDMA device
  unsigned rx_queues = 0, tx_queues = 0;  // /sys/class/net/X/queues/{rx,tx}-N
  std::optional<EthtoolAnswers::Rings> rings;
  std::optional<EthtoolAnswers::Channels> channels;
  int numa_node = -1;             // the PCI function's, -1 unknown (or a one-node machine)
  std::vector<unsigned> numa_cpus;  // that node's CPUs
  std::vector<IrqBinding> irqs;
  std::string driver, driver_version, firmware;
  std::map<std::string, bool> offloads;
  unsigned speed_mbps = 0;        // /sys/class/net/X/speed, 0 unknown

  std::string name() const { return netdev.empty() ? rdma_device : netdev; }
  // "eth0 mlx5_core 5.8-1.0.1 firmware 16.35.2000": what a baseline records and drift is judged on.
  std::string driver_summary() const;
};

using EthtoolReader = std::function<std::optional<EthtoolAnswers>(const std::string& netdev)>;
// The live ioctl on this host's interfaces (nullopt when the interface does not exist here).
std::optional<EthtoolAnswers> read_ethtool(const std::string& netdev);

// Every NIC with a device behind it (physical functions and VFs; lo, bridges, veths and other software
// interfaces have none) under `root`, plus RDMA devices without a netdev; sorted by name. `ethtool` is
// asked per netdev (pass {} for a recorded tree: those parts stay unknown).
std::vector<NicSettings> read_nic_settings(const std::string& root, const EthtoolReader& ethtool);

// Every NIC's driver_summary() joined with "; ", or only the one named (its netdev or RDMA device, an
// RDMA port's ":1" ignored): what a link baseline records for a host.
std::string driver_summaries(const std::vector<NicSettings>& nics, const std::string& only = "");

// The drivers a link measurement on `only` went through (every NIC's when empty), from `nics` as
// read_nic_settings read them. A software interface named there (a veth, a bond, a bridge) is no NIC it
// lists, yet its driver is what carried the traffic: it is asked through `ethtool` alone.
std::string measured_drivers(const std::vector<NicSettings>& nics, const std::string& only, const EthtoolReader& ethtool);

// The settings as JSON and back, every field kept: a reading made in a child with a deadline (a NIC
// driver's ioctl can hang) comes back to the caller this way. from_json throws std::runtime_error.
std::string nic_settings_to_json(const std::vector<NicSettings>& nics);
std::vector<NicSettings> nic_settings_from_json(const std::string& json);

}  // namespace cnet::topology
