#pragma once
// What one task of a job step gets from cnet: NIC/transport environment for its GPUs, the CPUs to bind
// it to, or the reason it must not start. Pure logic over a NodeTopology, so it is tested outside Slurm.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cnet/topology/model.hpp"

namespace cnet::scheduling {

enum class BindMode { none, closest, strict };
enum class NetMode { automatic, rdma, tcp };

std::optional<BindMode> parse_bind(std::string_view value);  // none|closest|strict
std::optional<NetMode> parse_net(std::string_view value);    // auto|rdma|tcp

// One NIC a task is given. RDMA NICs go to NCCL and UCX as device:port, others by netdev.
struct NicChoice {
  std::string name;         // CNET_NICS: the RDMA device, else the netdev
  std::string rdma_device;  // "" for plain Ethernet
  unsigned port = 1;
  std::string netdev;       // "" when the RDMA device has none
};
// NCCL_IB_HCA="=mlx5_0:1,..." (RDMA only), UCX_NET_DEVICES (device:port, or netdevs without RDMA) and
// NCCL_SOCKET_IFNAME="=ib0,..." when any has a netdev: the one spelling of these variables, used for a
// task's NICs (plan_task_environment) and for the NICs gres/rdma allocated (rdma_environment).
std::vector<std::pair<std::string, std::string>> nic_variables(const std::vector<NicChoice>& nics, bool rdma);

struct TaskRequest {
  std::vector<unsigned> step_gpus;  // GPU indexes (bus order) allocated to the step on this node
  unsigned local_task = 0, local_tasks = 1;
  BindMode bind = BindMode::closest;
  bool bind_requested = false;      // the user asked for --cnet-bind explicitly
  NetMode net = NetMode::automatic;
  std::string template_name;        // "" when none
  std::string topology_path;        // exported as CNET_TOPOLOGY
  std::string nccl_topo_file;       // exported as NCCL_TOPO_FILE when set
  // RDMA devices gres/rdma allocated to the task (CNET_RDMA_DEVICES): NICs are chosen among these only,
  // and when the topology knows none of them the gres plugin's NCCL_IB_HCA/UCX_NET_DEVICES stand.
  std::vector<std::string> allocated_rdma;
  // CNET_NICS came with the environment: cnet chose NICs for an enclosing step (the batch script's),
  // so a step that chooses none must not keep that step's NCCL/UCX NIC variables either.
  bool inherited_nics = false;
  // NCCL_IB_HCA / UCX_NET_DEVICES / NCCL_SOCKET_IFNAME the user set before launching (not cnet for an
  // enclosing step): kept as they are unless --cnet-bind or --cnet-net was asked for explicitly.
  bool user_nic_variables = false;
  bool net_requested = false;  // --cnet-net given explicitly
};

struct TaskEnvironment {
  std::vector<std::pair<std::string, std::string>> variables;
  std::vector<std::string> unset;  // variables to remove from the task's environment
  std::vector<unsigned> cpus;  // OS CPU indexes to bind to (strict); empty: leave binding alone
  std::string error;           // set: the task must not start, and this says why and what to do
  std::string warning;         // set: the task starts, but the user asked for something cnet could not do
};

TaskEnvironment plan_task_environment(const topology::NodeTopology& topo, const TaskRequest& request);

}  // namespace cnet::scheduling
