#include <gtest/gtest.h>

#include <map>

#include "cnet/scheduling/task_environment.hpp"
#include "../topology/test_support.hpp"

using namespace cnet::scheduling;
namespace topo = cnet::topology;

namespace {
topo::NodeTopology fixture(const std::string& name) { return topo::testing::load_fixture(name); }
std::map<std::string, std::string> vars(const TaskEnvironment& env) { return {env.variables.begin(), env.variables.end()}; }
}  // namespace

TEST(OptionGrammar, BindAndNetModes) {
  EXPECT_EQ(parse_bind("strict"), BindMode::strict);
  EXPECT_FALSE(parse_bind("Strict"));
  EXPECT_EQ(parse_net("auto"), NetMode::automatic);
  EXPECT_FALSE(parse_net(""));
}

// The 32em64t machine: GPU0 on socket 0, GPUs 1-2 and the ConnectX-4 on socket 1.
TEST(TaskEnvironment, EachTaskGetsItsGpusNic) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  TaskRequest r;
  r.step_gpus = {0, 1, 2};
  r.local_tasks = 3;
  r.template_name = "debug";
  r.topology_path = "/var/spool/cnet/topology-n1.json";
  for (unsigned task = 0; task < 3; ++task) {
    r.local_task = task;
    auto env = plan_task_environment(node, r);
    ASSERT_EQ(env.error, "");
    auto v = vars(env);
    EXPECT_EQ(v["CNET_GPUS"], std::to_string(task));
    EXPECT_EQ(v["NCCL_IB_HCA"], "=mlx5_0:1");
    EXPECT_EQ(v["UCX_NET_DEVICES"], "mlx5_0:1");
    EXPECT_EQ(v["NCCL_SOCKET_IFNAME"], "=ib0");
    EXPECT_EQ(v["CNET_TEMPLATE"], "debug");
    EXPECT_EQ(v["CNET_TOPOLOGY"], "/var/spool/cnet/topology-n1.json");
    EXPECT_TRUE(env.cpus.empty()) << "closest does not bind CPUs";
  }
}

// srun --cnet-bind=none inside a batch script whose own step cnet gave a NIC: that NIC must not leak in.
// A user who set NCCL_IB_HCA or UCX_NET_DEVICES and asked cnet for nothing keeps them; an explicit
// --cnet-bind or --cnet-net is asking for cnet's choice.
TEST(TaskEnvironment, TheUsersOwnNicVariablesStandWithoutACnetOption) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  TaskRequest r;
  r.step_gpus = {2};
  r.user_nic_variables = true;
  auto v = vars(plan_task_environment(node, r));
  EXPECT_EQ(v.count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(v.count("UCX_NET_DEVICES"), 0u);
  EXPECT_EQ(v.count("NCCL_SOCKET_IFNAME"), 0u);
  EXPECT_EQ(v["CNET_GPUS"], "2") << "the rest of the plan still applies";
  r.bind_requested = true;
  EXPECT_EQ(vars(plan_task_environment(node, r))["NCCL_IB_HCA"], "=mlx5_0:1");
  r.bind_requested = false;
  r.net_requested = true;
  EXPECT_EQ(vars(plan_task_environment(node, r))["NCCL_IB_HCA"], "=mlx5_0:1");
}

TEST(TaskEnvironment, NoneDropsTheEnclosingStepsNics) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  TaskRequest r;
  r.step_gpus = {0};
  r.bind = BindMode::none;
  r.inherited_nics = true;
  auto env = plan_task_environment(node, r);
  EXPECT_EQ(vars(env).count("UCX_NET_DEVICES"), 0u);
  EXPECT_EQ(env.unset, (std::vector<std::string>{"CNET_NICS", "NCCL_IB_HCA", "UCX_NET_DEVICES", "NCCL_SOCKET_IFNAME"}));
  r.inherited_nics = false;
  EXPECT_TRUE(plan_task_environment(node, r).unset.empty()) << "the user's own variables stay";
  r.inherited_nics = true;
  r.bind = BindMode::closest;
  EXPECT_TRUE(plan_task_environment(node, r).unset.empty()) << "closest sets its own values over them";
}

TEST(TaskEnvironment, StrictBindsToTheGpusSocket) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  TaskRequest r;
  r.step_gpus = {2};
  r.bind = BindMode::strict;
  auto env = plan_task_environment(node, r);
  EXPECT_EQ(vars(env)["CNET_CPU_BIND"], "8-15,24-31");
  EXPECT_EQ(env.cpus.size(), 16u);
}

TEST(TaskEnvironment, NetModes) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  TaskRequest r;
  r.step_gpus = {2};
  r.net = NetMode::tcp;
  auto v = vars(plan_task_environment(node, r));
  EXPECT_EQ(v["UCX_TLS"], "tcp,sm,self");
  EXPECT_EQ(v["NCCL_IB_DISABLE"], "1");
  EXPECT_EQ(v.count("NCCL_IB_HCA"), 0u);

  auto ethernet_only = fixture("96em64t-4n4d3ca2co-pci.xml");
  r.net = NetMode::rdma;
  auto env = plan_task_environment(ethernet_only, r);
  EXPECT_NE(env.error.find("--cnet-net=rdma but node"), std::string::npos) << env.error;
  r.net = NetMode::automatic;
  r.step_gpus.clear();
  v = vars(plan_task_environment(ethernet_only, r));
  EXPECT_EQ(v["UCX_NET_DEVICES"], "eth0,eth1,eth2,eth3,eth4,eth5,eth6,eth7") << "no GPU: every NIC, the library chooses";
}

TEST(TaskEnvironment, UnknownGpuIsSkippedNotFatal) {
  auto node = fixture("96em64t-4n4d3ca2co-pci.xml");  // no GPUs, yet Slurm allocated one
  TaskRequest r;
  r.step_gpus = {0};
  auto quiet = plan_task_environment(node, r);
  EXPECT_EQ(quiet.error, "");
  EXPECT_EQ(quiet.warning, "") << "default binding stays silent";
  r.bind_requested = true;
  auto loud = plan_task_environment(node, r);
  EXPECT_EQ(loud.error, "");
  EXPECT_NE(loud.warning.find("GPU 0 of this step is not among the 0 GPUs"), std::string::npos) << loud.warning;
}

TEST(TaskEnvironment, MoreTasksThanGpusShareRoundRobin) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  TaskRequest r;
  r.step_gpus = {1, 2};
  r.local_tasks = 4;
  r.local_task = 3;
  EXPECT_EQ(vars(plan_task_environment(node, r))["CNET_GPUS"], "2");
  r.local_tasks = 1;
  r.local_task = 0;
  EXPECT_EQ(vars(plan_task_environment(node, r))["CNET_GPUS"], "1,2");
}

// A DOWN port is never put into a task's NIC variables, with or without GPUs: the job would die on it.
TEST(TaskEnvironment, DownPortsAreNeverHandedToTasks) {
  auto node = fixture("96em64t-4n4d3ca2co-pci.xml");
  for (auto& n : node.nics) n.state = n.netdev == "eth1" || n.netdev == "eth3" ? "down" : "up";
  TaskRequest r;
  auto v = vars(plan_task_environment(node, r));
  EXPECT_EQ(v["UCX_NET_DEVICES"], "eth0,eth2,eth4,eth5,eth6,eth7");

  auto gpus = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  ASSERT_EQ(gpus.nics.front().name, "mlx5_0");
  gpus.nics.front().state = "DOWN";
  r.step_gpus = {2};
  v = vars(plan_task_environment(gpus, r));
  EXPECT_EQ(v.count("NCCL_IB_HCA"), 0u) << v["NCCL_IB_HCA"];
  EXPECT_EQ(v.count("UCX_NET_DEVICES"), 0u) << v["UCX_NET_DEVICES"];
}
