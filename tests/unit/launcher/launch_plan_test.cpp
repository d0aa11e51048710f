#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "cnet/launcher/launch_plan.hpp"
#include "../topology/test_support.hpp"

using namespace cnet::launcher;
namespace topo = cnet::topology;

namespace {

topo::NodeTopology fixture(const std::string& name) { return topo::testing::load_fixture(name); }
std::map<std::string, std::string> vars(const LaunchPlan& p) { return {p.variables.begin(), p.variables.end()}; }

// Rank `rank` of 4 tasks on two nodes, two per node (Slurm's block distribution).
LaunchRequest four_tasks(unsigned rank) {
  LaunchRequest r;
  r.placement.rank = rank;
  r.placement.size = 4;
  r.placement.local_rank = rank % 2;
  r.placement.local_size = 2;
  r.placement.hostname = rank < 2 ? "n1" : "n2";
  r.placement.job_id = "slurm.pmix.7.0";
  r.rank_hosts = {"n1", "n1", "n2", "n2"};
  r.master_addr = "10.0.0.1";
  r.master_port = 29500;
  r.interfaces = {"eth0", "ib0"};
  for (unsigned c = 0; c < 32; ++c) r.allowed_cpus.push_back(c);
  r.bind = cnet::scheduling::BindMode::none;
  return r;
}

}  // namespace

TEST(LaunchPlan, NodesNumberedInRankOrder) {
  EXPECT_EQ(node_ranks({"b", "b", "a", "c", "a"}), (std::vector<unsigned>{0, 0, 1, 2, 1}));
}

TEST(LaunchPlan, TorchEnvContract) {
  for (unsigned rank = 0; rank < 4; ++rank) {
    auto v = vars(plan_launch(four_tasks(rank), nullptr));
    EXPECT_EQ(v["RANK"], std::to_string(rank));
    EXPECT_EQ(v["WORLD_SIZE"], "4");
    EXPECT_EQ(v["LOCAL_RANK"], std::to_string(rank % 2));
    EXPECT_EQ(v["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(v["GROUP_RANK"], std::to_string(rank / 2));
    EXPECT_EQ(v["NODE_RANK"], std::to_string(rank / 2));
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(v["MASTER_ADDR"], "10.0.0.1");
    EXPECT_EQ(v["MASTER_PORT"], "29500");
    EXPECT_EQ(v["TORCHELASTIC_RUN_ID"], "slurm.pmix.7.0");
    EXPECT_EQ(v["TORCHELASTIC_USE_AGENT_STORE"], "False");
    EXPECT_EQ(v["OMP_NUM_THREADS"], "16");  // half the node's 32 CPUs each
  }
}

TEST(LaunchPlan, ThreadsFromSlurmOrUser) {
  auto r = four_tasks(0);
  r.cpus_per_task = "6";
  EXPECT_EQ(vars(plan_launch(r, nullptr))["OMP_NUM_THREADS"], "6");
  r.omp_num_threads = "3";
  EXPECT_EQ(vars(plan_launch(r, nullptr))["OMP_NUM_THREADS"], "3");
  r = four_tasks(0);
  r.allowed_cpus = {0};
  EXPECT_EQ(vars(plan_launch(r, nullptr))["OMP_NUM_THREADS"], "1");
  // Since Slurm 23.11 srun does not inherit the batch job's --cpus-per-task: the variable the job exported
  // says 6, the step's task got 2 CPUs. Threads follow what the task really has.
  r = four_tasks(0);
  r.cpus_per_task = "6";
  r.allowed_cpus = {4, 5};
  EXPECT_EQ(vars(plan_launch(r, nullptr))["OMP_NUM_THREADS"], "2");
}

// The 32em64t machine: GPU0 on socket 0, GPUs 1-2 and the ConnectX-4 (mlx5_0, ib0) on socket 1.
TEST(LaunchPlan, BindsEachTaskToItsGpusNicAndCores) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  auto r = four_tasks(1);
  r.bind = cnet::scheduling::BindMode::strict;
  r.step_gpus = {1, 2};
  r.cuda_visible_devices = "1,2";
  auto plan = plan_launch(r, &node);
  ASSERT_EQ(plan.error, "");
  auto v = vars(plan);
  EXPECT_EQ(v["CNET_GPUS"], "2");
  EXPECT_EQ(v["NCCL_IB_HCA"], "=mlx5_0:1");
  EXPECT_EQ(v["GLOO_SOCKET_IFNAME"], "ib0");
  EXPECT_EQ(v["CUDA_VISIBLE_DEVICES"], "") << "visible: left as Slurm set it";
  EXPECT_EQ(plan.cpus.size(), 16u);
  EXPECT_EQ(v["RANK"], "1");
}

// Slurm confined the task to two CPUs of socket 1 (a cpuset or --cpu-bind): strict binding narrows
// to those, never widens to the whole socket.
TEST(LaunchPlan, StrictBindingStaysInsideTheTasksAllowedCpus) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  auto r = four_tasks(1);
  r.bind = cnet::scheduling::BindMode::strict;
  r.step_gpus = {1, 2};
  r.allowed_cpus = {8, 9, 0};
  auto plan = plan_launch(r, &node);
  ASSERT_EQ(plan.error, "");
  EXPECT_EQ(plan.cpus, (std::vector<unsigned>{8, 9}));
  EXPECT_EQ(vars(plan)["CNET_CPU_BIND"], "8-9");
  r.allowed_cpus = {0, 1};  // none of GPU2's cores: binding left alone, with a warning
  plan = plan_launch(r, &node);
  EXPECT_TRUE(plan.cpus.empty());
  EXPECT_NE(plan.warning.find("binding left as is"), std::string::npos) << plan.warning;
}

// The topology names ib0 for sockets, but this node has no such interface up (a stale topology file,
// an IPoIB port down): gloo would abort with "Unable to find address for: ib0". It gets the node's own
// interface instead, and the user is told why.
TEST(LaunchPlan, GlooNeverNamesAnInterfaceThisNodeLacks) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  auto r = four_tasks(1);
  r.bind = cnet::scheduling::BindMode::strict;
  r.step_gpus = {1, 2};
  r.interfaces = {"eth0"};
  auto plan = plan_launch(r, &node);
  ASSERT_EQ(plan.error, "");
  EXPECT_EQ(vars(plan)["GLOO_SOCKET_IFNAME"], "eth0");
  EXPECT_NE(plan.warning.find("ib0"), std::string::npos) << plan.warning;
  EXPECT_NE(plan.warning.find("--master-iface"), std::string::npos) << plan.warning;
  r.interfaces = {};  // nothing but loopback: gloo finds its own way (the hostname's address)
  EXPECT_EQ(vars(plan_launch(r, &node)).count("GLOO_SOCKET_IFNAME"), 0u);
}

TEST(LaunchPlan, SingleGpuBindNarrowsVisibleDevicesInTheTasksNumbering) {
  auto node = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  auto r = four_tasks(1);
  r.bind = cnet::scheduling::BindMode::closest;
  r.gpu_bind = GpuBind::single;
  r.step_gpus = {1, 2};
  r.cuda_visible_devices = "0,1";  // renumbered by device cgroups
  r.master_iface = "eth0";
  auto v = vars(plan_launch(r, &node));
  EXPECT_EQ(v["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(v["GLOO_SOCKET_IFNAME"], "eth0") << "--master-iface wins";
}

TEST(LaunchPlan, NoTopologyStillLaunchesWithAWarning) {
  auto r = four_tasks(0);
  r.bind = cnet::scheduling::BindMode::closest;
  auto plan = plan_launch(r, nullptr);
  EXPECT_EQ(plan.error, "");
  EXPECT_NE(plan.warning.find("no node topology"), std::string::npos);
  EXPECT_EQ(vars(plan)["RANK"], "0");
}


// The reserved port is really held: nobody else can bind it until cnet-launch lets go before exec.
TEST(LaunchPlan, MasterPortIsHeldUntilReleased) {
  unsigned port = 0;
  int fd = reserve_port("127.0.0.1", port);
  ASSERT_GT(port, 0u);
  auto try_bind = [&] {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // what a careless framework would do
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    bool ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(s);
    return ok;
  };
  EXPECT_FALSE(try_bind()) << "another socket took the reserved port";
  close(fd);
  EXPECT_TRUE(try_bind()) << "the framework can bind it once released";
  unsigned taken = port;
  int again = reserve_port("127.0.0.1", port);
  EXPECT_THROW(reserve_port("127.0.0.1", taken), std::runtime_error);
  close(again);
}
