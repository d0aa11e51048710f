#pragma once
// What cnet-launch gives one task before it execs a framework: the torch.distributed env:// contract
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT and
// torchrun's other variables), so PyTorch, Lightning, accelerate and DeepSpeed see one consistent job,
// and the task's GPU, its closest NIC and cores from the node topology. Pure logic, tested outside Slurm.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cnet/scheduling/task_environment.hpp"
#include "cnet/topology/model.hpp"
#include "cnet/transport/bootstrap.hpp"

namespace cnet::launcher {

enum class GpuBind { visible, single };  // all step GPUs stay visible (torchrun's contract) / only the task's

struct LaunchRequest {
  transport::Placement placement;
  std::vector<std::string> rank_hosts;  // every rank's hostname, in rank order
  std::string master_addr;
  unsigned master_port = 0;
  scheduling::BindMode bind = scheduling::BindMode::closest;
  GpuBind gpu_bind = GpuBind::visible;
  std::string master_iface;            // also exported as GLOO_SOCKET_IFNAME when set
  std::vector<std::string> interfaces;  // this node's up, non-loopback IPv4 interfaces, the default first
  std::vector<unsigned> step_gpus;     // SLURM_STEP_GPUS (or CUDA_VISIBLE_DEVICES) as indexes
  std::string cuda_visible_devices;    // as the task got it
  std::string nccl_topo_file;          // kept as the SPANK plugin set it
  std::vector<std::string> allocated_rdma;  // CNET_RDMA_DEVICES from gres/rdma
  std::string topology_path;
  std::vector<unsigned> allowed_cpus;  // the task's affinity mask before binding (Slurm's cpuset/--cpu-bind)
  std::string cpus_per_task;           // SLURM_CPUS_PER_TASK, if set
  std::string omp_num_threads;         // OMP_NUM_THREADS, if already set (it wins)
};

struct LaunchPlan {
  std::vector<std::pair<std::string, std::string>> variables;
  std::vector<unsigned> cpus;  // bind to these before exec (always within allowed_cpus); empty: leave affinity alone
  std::string warning;
  std::string error;
};

// Node index of every rank: hosts numbered in order of first appearance in rank order (Slurm's block
// distribution numbers nodes the same way).
std::vector<unsigned> node_ranks(const std::vector<std::string>& rank_hosts);

LaunchPlan plan_launch(const LaunchRequest& request, const topology::NodeTopology* topology);

// Rank 0's port for the c10d store, held until just before exec so no other rank or process takes it:
// bound and listening (a socket merely bound with SO_REUSEADDR holds nothing). `port` 0 picks a free
// one and returns it there. Returns the descriptor to close before exec; throws std::runtime_error.
int reserve_port(const std::string& address, unsigned& port);

}  // namespace cnet::launcher
