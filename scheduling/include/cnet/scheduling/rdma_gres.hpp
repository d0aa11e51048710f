#pragma once
// gres/rdma's logic: which RDMA device and port a gres.conf File= line names, and what a step with some
// RDMA devices allocated gets in its environment. Tested outside slurmd; the plugin only calls it.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace cnet::scheduling {

struct RdmaPort {
  std::string device;  // "mlx5_0"
  unsigned port = 1;
};

// The RDMA device behind `device_file` (/dev/infiniband/uverbsN): the kernel's name from
// <sysfs_root>/sys/class/infiniband_verbs/uverbsN/ibdev when it exists, else gres.conf's Type= (what
// cnet-topo --format gres writes), else the file's own name; and the port jobs should use on it: its
// first ACTIVE port in sysfs, else its first port, else 1 (a device sysfs does not show).
RdmaPort rdma_device_port(const std::filesystem::path& sysfs_root, const std::string& device_file, const std::string& type);

// "mlx5_0:1" <-> {mlx5_0, 1}: how slurmd hands a device to slurmstepd. A missing or bad port reads as 1.
std::string to_string(const RdmaPort& p);
RdmaPort parse_rdma_port(const std::string& text);

// CNET_RDMA_DEVICES=mlx5_0,mlx5_1  NCCL_IB_HCA==mlx5_0:1,mlx5_1:2  UCX_NET_DEVICES=mlx5_0:1,mlx5_1:2
std::vector<std::pair<std::string, std::string>> rdma_environment(const std::vector<RdmaPort>& devices);

}  // namespace cnet::scheduling
