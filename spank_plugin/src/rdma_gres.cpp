#include "cnet/spank/rdma_gres.hpp"

#include <fstream>

#include "cnet/spank/text_lists.hpp"

namespace cnet::scheduling {

std::string rdma_device_name(const std::filesystem::path& sysfs_root, const std::string& device_file, const std::string& type) {
  std::string file = std::filesystem::path(device_file).filename().string();
  std::ifstream ibdev(sysfs_root / "sys/class/infiniband_verbs" / file / "ibdev");
  std::string name;
  if (ibdev && std::getline(ibdev, name) && !name.empty()) return name;
  return type.empty() ? file : type;
}

std::vector<std::pair<std::string, std::string>> rdma_environment(const std::vector<std::string>& devices) {
  if (devices.empty()) return {};
  std::vector<std::string> ports;
  for (const auto& d : devices) ports.push_back(d + ":1");
  return {{"CNET_RDMA_DEVICES", join(devices, ",")}, {"NCCL_IB_HCA", "=" + join(ports, ",")}, {"UCX_NET_DEVICES", join(ports, ",")}};
}

}  // namespace cnet::scheduling
