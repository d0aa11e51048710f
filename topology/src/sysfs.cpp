#include "cnet/topology/sysfs.hpp"

#include <algorithm>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"
#include <regex>
#include <system_error>

namespace cnet::topology {
namespace fs = std::filesystem;
namespace {

// The first line of a small sysfs/procfs file, trimmed; nullopt when it is missing or unreadable.
std::optional<std::string> read_line(const fs::path& p) {
  try {
    auto text = common::read_file_if_exists(p, 1 << 16);
    if (!text) return std::nullopt;
    return common::trim(text->substr(0, text->find('\n')));
  } catch (const common::FileError&) {
    return std::nullopt;
  }
}

std::optional<long> read_number(const fs::path& p) {
  auto line = read_line(p);
  if (!line) return std::nullopt;
  try {
    return std::stol(*line);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "4: ACTIVE" -> "ACTIVE"
std::string after_colon(const std::string& s) {
  auto pos = s.find(": ");
  return pos == std::string::npos ? s : s.substr(pos + 2);
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// The PCI bus id a sysfs "device" link points at (last path component), empty when there is none.
std::string pci_of_device_link(const fs::path& link) {
  std::error_code ec;
  fs::path target = fs::read_symlink(link, ec);
  if (ec) return {};
  std::string name = target.filename();
  static const std::regex bdf("^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$");
  return std::regex_match(name, bdf) ? name : std::string();
}

}  // namespace

std::pair<unsigned, unsigned> parse_ib_rate(const std::string& text) {
  // At most 6 digits of rate and 3 of lanes: a damaged file with more is unknown, and stoul never overflows.
  static const std::regex re("^\\s*([0-9]{1,6})(\\.[0-9]+)?\\s*Gb/sec(\\s*\\(([0-9]{1,3})X)?");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return {0, 0};
  unsigned rate = static_cast<unsigned>(std::stoul(m[1]));
  unsigned lanes = m[4].matched ? static_cast<unsigned>(std::stoul(m[4])) : 0;
  return {rate, lanes};
}

bool SysfsReader::has_class_net() const { return fs::is_directory(path("sys/class/net")); }

std::vector<std::string> SysfsReader::netdevs() const { return list_dir(path("sys/class/net")); }
std::vector<std::string> SysfsReader::rdma_devices() const { return list_dir(path("sys/class/infiniband")); }

std::vector<unsigned> SysfsReader::rdma_ports(const std::string& device) const {
  std::vector<unsigned> ports;
  for (const auto& p : list_dir(path("sys/class/infiniband/" + device + "/ports"))) {
    try {
      ports.push_back(static_cast<unsigned>(std::stoul(p)));
    } catch (const std::exception&) {
    }
  }
  std::sort(ports.begin(), ports.end());
  return ports;
}

std::optional<RdmaPortInfo> SysfsReader::rdma_port(const std::string& device, unsigned port) const {
  fs::path dir = path("sys/class/infiniband/" + device + "/ports/" + std::to_string(port));
  if (!fs::is_directory(dir)) return std::nullopt;
  RdmaPortInfo info;
  info.state = after_colon(read_line(dir / "state").value_or(""));
  info.phys_state = after_colon(read_line(dir / "phys_state").value_or(""));
  info.link_layer = read_line(dir / "link_layer").value_or("");
  std::tie(info.rate_gbps, info.lanes) = parse_ib_rate(read_line(dir / "rate").value_or(""));
  return info;
}

std::optional<NetdevInfo> SysfsReader::netdev(const std::string& name) const {
  fs::path dir = path("sys/class/net/" + name);
  if (!fs::exists(dir)) return std::nullopt;
  NetdevInfo info;
  info.mtu = static_cast<unsigned>(std::max(0L, read_number(dir / "mtu").value_or(0)));
  // speed is -1 or unreadable (EINVAL) while the link is down
  info.speed_mbps = static_cast<unsigned>(std::max(0L, read_number(dir / "speed").value_or(0)));
  info.operstate = read_line(dir / "operstate").value_or("");
  info.pci_bus_id = pci_of_device_link(dir / "device");
  return info;
}

std::vector<std::string> SysfsReader::netdevs_of_pci(const std::string& bus_id) const {
  std::vector<std::string> out;
  for (const auto& n : netdevs())
    if (pci_of_device_link(path("sys/class/net/" + n + "/device")) == bus_id) out.push_back(n);
  return out;
}

std::vector<std::string> SysfsReader::rdma_devices_of_pci(const std::string& bus_id) const {
  std::vector<std::string> out;
  for (const auto& d : rdma_devices())
    if (pci_of_device_link(path("sys/class/infiniband/" + d + "/device")) == bus_id) out.push_back(d);
  return out;
}

std::string SysfsReader::verbs_device_of(const std::string& rdma_device) const {
  auto found = list_dir(path("sys/class/infiniband/" + rdma_device + "/device/infiniband_verbs"));
  return found.empty() ? "" : found.front();
}

std::string SysfsReader::rdma_device_of_verbs(const std::string& verbs_device) const {
  if (verbs_device.empty() || verbs_device.find('/') != std::string::npos || verbs_device[0] == '.') return "";
  return read_line(path("sys/class/infiniband_verbs/" + verbs_device + "/ibdev")).value_or("");
}

std::optional<unsigned> SysfsReader::nvidia_minor(const std::string& bus_id) const {
  std::optional<std::string> text;
  try {
    text = common::read_file_if_exists(path("proc/driver/nvidia/gpus/" + bus_id + "/information"), 1 << 16);
  } catch (const common::FileError&) {
  }
  std::istringstream in(text.value_or(""));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Device Minor:", 0) == 0) {
      try {
        return static_cast<unsigned>(std::stoul(line.substr(13)));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::string SysfsReader::rdma_system_guid(const std::string& rdma_device) const {
  if (rdma_device.empty() || rdma_device.find('/') != std::string::npos || rdma_device[0] == '.') return "";
  return read_line(path("sys/class/infiniband/" + rdma_device + "/sys_image_guid")).value_or("");
}

std::string SysfsReader::gpudirect_rdma_module() const {
  static const std::pair<const char*, const char*> modules[] = {{"sys/module/nvidia_peermem/version", "nvidia_peermem"},
                                                                {"sys/kernel/mm/memory_peers/nv_mem/version", "nv_mem"},
                                                                {"sys/kernel/mm/memory_peers/nv_mem_nc/version", "nv_mem_nc"}};
  std::error_code ec;
  for (const auto& [file, name] : modules)
    if (fs::exists(path(file), ec)) return name;
  return "";
}

std::string SysfsReader::recorded_hostname() const {
  for (const char* file : {"proc/sys/kernel/hostname", "etc/hostname"})
    if (auto name = read_line(path(file)); name && !name->empty()) return *name;
  return "";
}

std::vector<std::string> SysfsReader::pci_devices() const { return list_dir(path("sys/bus/pci/devices")); }

std::vector<std::pair<std::string, std::string>> SysfsReader::rdma_device_functions() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : rdma_devices())
    if (auto bus = pci_of_device_link(path("sys/class/infiniband/" + d + "/device")); !bus.empty()) out.emplace_back(d, bus);
  return out;
}

}  // namespace cnet::topology
