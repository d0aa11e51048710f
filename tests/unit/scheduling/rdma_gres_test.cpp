#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "cnet/spank/rdma_gres.hpp"
#include "cnet/spank/task_environment.hpp"
#include "../topology/test_support.hpp"

using namespace cnet::scheduling;
namespace fs = std::filesystem;

TEST(RdmaGres, DeviceNamesFromSysfsThenTypeThenFile) {
  fs::path root = fs::temp_directory_path() / ("cnet-rdma-" + std::to_string(getpid()));
  fs::create_directories(root / "sys/class/infiniband_verbs/uverbs1");
  std::ofstream(root / "sys/class/infiniband_verbs/uverbs1/ibdev") << "mlx5_3\n";
  EXPECT_EQ(rdma_device_name(root, "/dev/infiniband/uverbs1", "mlx5_0"), "mlx5_3") << "the kernel's name wins";
  EXPECT_EQ(rdma_device_name(root, "/dev/infiniband/uverbs0", "mlx5_0"), "mlx5_0");
  EXPECT_EQ(rdma_device_name(root, "/dev/infiniband/uverbs0", ""), "uverbs0");
  fs::remove_all(root);
}

TEST(RdmaGres, StepEnvironment) {
  auto env = rdma_environment({"mlx5_0", "mlx5_1"});
  std::map<std::string, std::string> v(env.begin(), env.end());
  EXPECT_EQ(v["CNET_RDMA_DEVICES"], "mlx5_0,mlx5_1");
  EXPECT_EQ(v["NCCL_IB_HCA"], "=mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(v["UCX_NET_DEVICES"], "mlx5_0:1,mlx5_1:1");
  EXPECT_TRUE(rdma_environment({}).empty());
}

// The SPANK plugin's per-task choice stays within what gres/rdma allocated.
TEST(RdmaGres, TaskNicsStayWithinTheAllocation) {
  auto node = cnet::topology::testing::load_fixture("32em64t-2n8c2t-pci-wholeio.xml");  // one ConnectX-4, mlx5_0
  TaskRequest r;
  r.step_gpus = {2};
  r.allocated_rdma = {"mlx5_0"};
  auto vars = [](const TaskEnvironment& e) { return std::map<std::string, std::string>(e.variables.begin(), e.variables.end()); };
  EXPECT_EQ(vars(plan_task_environment(node, r))["NCCL_IB_HCA"], "=mlx5_0:1");
  r.allocated_rdma = {"mlx5_7"};  // a device this topology does not know: gres/rdma's variables stand
  auto v = vars(plan_task_environment(node, r));
  EXPECT_EQ(v.count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(v.count("UCX_NET_DEVICES"), 0u);
  EXPECT_EQ(v["CNET_GPUS"], "2");
}
