#pragma once
// gres/rdma's logic: which RDMA device a gres.conf File= line names, and what a step with some RDMA
// devices allocated gets in its environment. Tested outside slurmd; the plugin only calls it.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace cnet::scheduling {

// The RDMA device behind `device_file` (/dev/infiniband/uverbsN): the kernel's name from
// <sysfs_root>/sys/class/infiniband_verbs/uverbsN/ibdev when it exists, else gres.conf's Type= (what
// cnet-topo --format gres writes), else the file's own name.
std::string rdma_device_name(const std::filesystem::path& sysfs_root, const std::string& device_file, const std::string& type);

// CNET_RDMA_DEVICES=mlx5_0,mlx5_1  NCCL_IB_HCA==mlx5_0:1,mlx5_1:1  UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1
std::vector<std::pair<std::string, std::string>> rdma_environment(const std::vector<std::string>& devices);

}  // namespace cnet::scheduling
