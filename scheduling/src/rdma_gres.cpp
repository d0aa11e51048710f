#include "cnet/scheduling/rdma_gres.hpp"

#include "cnet/common/text.hpp"
#include "cnet/scheduling/task_environment.hpp"
#include "cnet/topology/sysfs.hpp"

namespace cnet::scheduling {

RdmaPort rdma_device_port(const std::filesystem::path& sysfs_root, const std::string& device_file, const std::string& type) {
  std::string file = std::filesystem::path(device_file).filename().string();
  topology::SysfsReader sysfs(sysfs_root);
  RdmaPort out{sysfs.rdma_device_of_verbs(file), 1};
  if (out.device.empty()) out.device = type.empty() ? file : type;
  auto ports = sysfs.rdma_ports(out.device);
  for (unsigned p : ports)
    if (auto info = sysfs.rdma_port(out.device, p); info && info->state == "ACTIVE") return {out.device, p};
  if (!ports.empty()) out.port = ports.front();
  return out;
}

std::string to_string(const RdmaPort& p) { return p.device + ":" + std::to_string(p.port); }

RdmaPort parse_rdma_port(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return {text, 1};
  auto port = common::parse_unsigned(std::string_view(text).substr(colon + 1), 3);
  if (!port || *port == 0 || *port > 255) return {text.substr(0, colon), 1};
  return {text.substr(0, colon), *port};
}

std::vector<std::pair<std::string, std::string>> rdma_environment(const std::vector<RdmaPort>& devices) {
  if (devices.empty()) return {};
  std::vector<std::string> names;
  std::vector<NicChoice> nics;
  for (const auto& d : devices) {
    names.push_back(d.device);
    nics.push_back({d.device, d.device, d.port, ""});
  }
  std::vector<std::pair<std::string, std::string>> vars = {{"CNET_RDMA_DEVICES", common::join(names, ",")}};
  for (auto& v : nic_variables(nics, true)) vars.push_back(std::move(v));
  return vars;
}

}  // namespace cnet::scheduling
