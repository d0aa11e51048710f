#include "cnet/topology/nic_settings.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"

namespace cnet::topology {
namespace {

namespace fs = std::filesystem;

fs::path under(const std::string& root, const std::string& absolute) {
  return root == "/" ? fs::path(absolute) : fs::path(root) / fs::path(absolute).relative_path();
}

// A small sysfs/procfs file's text without its newline, "" when missing or unreadable (a down link's
// `speed` fails to read: unknown, not an error).
std::string read_value(const fs::path& p) {
  try {
    return common::trim(common::read_file_if_exists(p, 1 << 16).value_or(""));
  } catch (const common::FileError&) {
    return "";
  }
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string link_name(const fs::path& p) {
  std::error_code ec;
  fs::path target = fs::read_symlink(p, ec);
  return ec ? "" : target.filename().string();
}

// The interface's IRQs: its PCI function's MSI/MSI-X vectors; a virtio NIC's device is the virtio
// device, whose parent is the PCI function; a legacy INTx line when there are no vectors.
std::vector<unsigned> irqs_of(const fs::path& device) {
  for (const fs::path& dir : {device / "msi_irqs", device / ".." / "msi_irqs"}) {
    std::vector<unsigned> irqs;
    for (const auto& name : entries(dir))
      if (auto n = common::parse_unsigned(name)) irqs.push_back(*n);
    if (!irqs.empty()) {
      std::sort(irqs.begin(), irqs.end());
      return irqs;
    }
  }
  auto line = common::parse_unsigned(read_value(device / "irq"));
  return line && *line > 0 ? std::vector<unsigned>{*line} : std::vector<unsigned>{};
}

int numa_node_of(const fs::path& device) {
  for (const fs::path& file : {device / "numa_node", device / ".." / "numa_node"}) {
    std::string v = read_value(file);
    if (v.empty()) continue;
    auto n = common::parse_unsigned(v, 4);
    return n ? static_cast<int>(*n) : -1;  // "-1": the firmware does not say (one-node machines, VMs)
  }
  return -1;
}

std::vector<unsigned> cpu_list(const std::string& text) { return common::parse_ranges(text, 1 << 16).value_or(std::vector<unsigned>{}); }

class EthtoolSocket {
 public:
  EthtoolSocket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~EthtoolSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  // One ETHTOOL_G* command into `data`; false when the driver does not answer it.
  bool ask(const std::string& netdev, void* data) const {
    if (fd_ < 0 || netdev.size() >= IFNAMSIZ) return false;
    ifreq req{};
    std::memcpy(req.ifr_name, netdev.data(), netdev.size());
    req.ifr_data = static_cast<char*>(data);
    return ::ioctl(fd_, SIOCETHTOOL, &req) == 0;
  }

 private:
  int fd_;
};

std::string fixed_text(const char* field, std::size_t size) { return common::trim(std::string(field, strnlen(field, size))); }

}  // namespace

std::string NicSettings::driver_summary() const {
  std::string s = name() + " " + (driver.empty() ? "unknown-driver" : driver);
  if (!driver_version.empty()) s += " " + driver_version;
  if (!firmware.empty()) s += " firmware " + firmware;
  return s;
}

std::string driver_summaries(const std::vector<NicSettings>& nics, const std::string& only) {
  std::string device = only.substr(0, only.find(':'));
  std::vector<std::string> out;
  for (const auto& n : nics)
    if (device.empty() || n.netdev == device || n.rdma_device == device) out.push_back(n.driver_summary());
  return common::join(out, "; ");
}

std::string measured_drivers(const std::vector<NicSettings>& nics, const std::string& only, const EthtoolReader& ethtool) {
  std::string found = driver_summaries(nics, only);
  std::string netdev = only.substr(0, only.find(':'));
  if (!found.empty() || netdev.empty() || !ethtool) return found;
  auto a = ethtool(netdev);
  if (!a || a->driver.empty()) return found;
  NicSettings s;
  s.netdev = netdev;
  s.driver = a->driver;
  s.driver_version = a->driver_version;
  s.firmware = a->firmware;
  return s.driver_summary();
}

std::optional<EthtoolAnswers> read_ethtool(const std::string& netdev) {
  if (netdev.empty() || if_nametoindex(netdev.c_str()) == 0) return std::nullopt;
  EthtoolSocket sock;
  EthtoolAnswers a;
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  if (sock.ask(netdev, &info)) {
    a.driver = fixed_text(info.driver, sizeof info.driver);
    a.driver_version = fixed_text(info.version, sizeof info.version);
    a.firmware = fixed_text(info.fw_version, sizeof info.fw_version);
    if (a.firmware == "N/A") a.firmware.clear();
  }
  ethtool_ringparam ring{};
  ring.cmd = ETHTOOL_GRINGPARAM;
  if (sock.ask(netdev, &ring) && (ring.rx_max_pending || ring.tx_max_pending))
    a.rings = EthtoolAnswers::Rings{ring.rx_pending, ring.rx_max_pending, ring.tx_pending, ring.tx_max_pending};
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  if (sock.ask(netdev, &ch))
    a.channels = EthtoolAnswers::Channels{ch.combined_count, ch.max_combined, ch.rx_count, ch.max_rx, ch.tx_count, ch.max_tx};
  for (auto [name, cmd] : {std::pair{"gro", ETHTOOL_GGRO}, {"gso", ETHTOOL_GGSO}, {"tso", ETHTOOL_GTSO}}) {
    ethtool_value v{};
    v.cmd = cmd;
    if (sock.ask(netdev, &v)) a.offloads[name] = v.data != 0;
  }
  ethtool_value flags{};
  flags.cmd = ETHTOOL_GFLAGS;
  if (sock.ask(netdev, &flags)) a.offloads["lro"] = (flags.data & ETH_FLAG_LRO) != 0;
  return a;
}

std::vector<NicSettings> read_nic_settings(const std::string& root, const EthtoolReader& ethtool) {
  std::vector<NicSettings> out;
  // RDMA devices first, to know which netdev is also one (mlx5_0 -> eth2) and their firmware.
  std::map<std::string, std::string> rdma_of_netdev;
  std::vector<NicSettings> rdma_only;
  fs::path ib = under(root, "/sys/class/infiniband");
  for (const auto& dev : entries(ib)) {
    auto nets = entries(ib / dev / "device" / "net");
    for (const auto& n : nets) rdma_of_netdev[n] = dev;
    if (nets.empty()) {
      NicSettings s;
      s.rdma_device = dev;
      s.driver = link_name(ib / dev / "device" / "driver");
      s.firmware = read_value(ib / dev / "fw_ver");
      s.numa_node = numa_node_of(ib / dev / "device");
      rdma_only.push_back(s);
    }
  }
  fs::path net = under(root, "/sys/class/net");
  for (const auto& name : entries(net)) {
    fs::path dir = net / name, device = dir / "device";
    std::error_code ec;
    if (!fs::exists(device, ec)) continue;  // a software interface: nothing of a NIC's to tune
    NicSettings s;
    s.netdev = name;
    if (auto it = rdma_of_netdev.find(name); it != rdma_of_netdev.end()) {
      s.rdma_device = it->second;
      s.firmware = read_value(ib / it->second / "fw_ver");
    }
    for (const auto& q : entries(dir / "queues")) {
      if (q.starts_with("rx-")) ++s.rx_queues;
      if (q.starts_with("tx-")) ++s.tx_queues;
    }
    s.speed_mbps = common::parse_unsigned(read_value(dir / "speed"), 7).value_or(0);
    s.driver = link_name(device / "driver");
    s.numa_node = numa_node_of(device);
    for (unsigned irq : irqs_of(device))
      s.irqs.push_back({irq, cpu_list(read_value(under(root, "/proc/irq/" + std::to_string(irq) + "/smp_affinity_list")))});
    if (ethtool)
      if (auto a = ethtool(name)) {
        if (!a->driver.empty()) s.driver = a->driver;
        s.driver_version = a->driver_version;
        if (!a->firmware.empty()) s.firmware = a->firmware;
        s.rings = a->rings;
        s.channels = a->channels;
        s.offloads = a->offloads;
      }
    out.push_back(std::move(s));
  }
  out.insert(out.end(), rdma_only.begin(), rdma_only.end());
  for (auto& s : out)
    if (s.numa_node >= 0)
      s.numa_cpus = cpu_list(read_value(under(root, "/sys/devices/system/node/node" + std::to_string(s.numa_node) + "/cpulist")));
  std::sort(out.begin(), out.end(), [](const NicSettings& a, const NicSettings& b) { return a.name() < b.name(); });
  return out;
}

}  // namespace cnet::topology
