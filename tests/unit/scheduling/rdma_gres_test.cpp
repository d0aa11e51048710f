#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "../scratch_dir.hpp"
#include "cnet/scheduling/rdma_bridge.h"
#include "cnet/scheduling/rdma_gres.hpp"
#include "cnet/scheduling/task_environment.hpp"
#include "../topology/test_support.hpp"

using namespace cnet::scheduling;
namespace fs = std::filesystem;

TEST(RdmaGres, DeviceNamesFromSysfsThenTypeThenFile) {
  cnet::testing::ScratchDir root;
  root.write("sys/class/infiniband_verbs/uverbs1/ibdev", "mlx5_3\n");
  EXPECT_EQ(rdma_device_port(root.path(), "/dev/infiniband/uverbs1", "mlx5_0").device, "mlx5_3") << "the kernel's name wins";
  EXPECT_EQ(rdma_device_port(root.path(), "/dev/infiniband/uverbs0", "mlx5_0").device, "mlx5_0");
  EXPECT_EQ(rdma_device_port(root.path(), "/dev/infiniband/uverbs0", "").device, "uverbs0");
}

// A dual-port HCA cabled on port 2 only: jobs must be told port 2, which is the one that is ACTIVE.
TEST(RdmaGres, PortIsTheFirstActiveOne) {
  cnet::testing::ScratchDir root;
  root.write("sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
  root.write("sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  root.write("sys/class/infiniband/mlx5_0/ports/2/state", "4: ACTIVE\n");
  auto p = rdma_device_port(root.path(), "/dev/infiniband/uverbs0", "");
  EXPECT_EQ(to_string(p), "mlx5_0:2");
  root.write("sys/class/infiniband/mlx5_0/ports/2/state", "1: DOWN\n");
  EXPECT_EQ(to_string(rdma_device_port(root.path(), "/dev/infiniband/uverbs0", "")), "mlx5_0:1") << "none ACTIVE: the first port";
  EXPECT_EQ(to_string(rdma_device_port(root.path(), "/dev/infiniband/uverbs9", "mlx5_9")), "mlx5_9:1") << "unknown to sysfs";
}

TEST(RdmaGres, StepEnvironment) {
  auto env = rdma_environment({{"mlx5_0", 1}, {"mlx5_1", 2}});
  std::map<std::string, std::string> v(env.begin(), env.end());
  EXPECT_EQ(v["CNET_RDMA_DEVICES"], "mlx5_0,mlx5_1");
  EXPECT_EQ(v["NCCL_IB_HCA"], "=mlx5_0:1,mlx5_1:2");
  EXPECT_EQ(v["UCX_NET_DEVICES"], "mlx5_0:1,mlx5_1:2");
  EXPECT_TRUE(rdma_environment({}).empty());
  EXPECT_EQ(parse_rdma_port("mlx5_1:2").port, 2u);
  EXPECT_EQ(parse_rdma_port("mlx5_1").port, 1u);
  EXPECT_EQ(parse_rdma_port("mlx5_1:x").device, "mlx5_1");
}

// The bridge the C plugin calls carries the port from slurmd to the step's variables.
TEST(RdmaGres, BridgeKeepsThePort) {
  char* env = cnet_rdma_environment("mlx5_0:2,mlx5_1:1");
  EXPECT_STREQ(env, "CNET_RDMA_DEVICES=mlx5_0,mlx5_1\nNCCL_IB_HCA==mlx5_0:2,mlx5_1:1\nUCX_NET_DEVICES=mlx5_0:2,mlx5_1:1");
  free(env);
  env = cnet_rdma_environment(nullptr);
  EXPECT_STREQ(env, "");
  free(env);
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
