#include "cnet/launcher/launch_plan.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#include "cnet/common/text.hpp"
#include "cnet/scheduling/cpu_binding.hpp"

namespace cnet::launcher {
namespace {

using common::split;

void set(LaunchPlan& plan, const std::string& name, const std::string& value) {
  for (auto& [n, v] : plan.variables)
    if (n == name) {
      v = value;
      return;
    }
  plan.variables.emplace_back(name, value);
}

std::string value_of(const LaunchPlan& plan, const std::string& name) {
  for (const auto& [n, v] : plan.variables)
    if (n == name) return v;
  return "";
}

// GLOO_SOCKET_IFNAME: --master-iface, else the first interface NCCL_SOCKET_IFNAME names that this
// node has up, else the node's default interface (gloo aborts on a name it cannot find), else unset.
std::string gloo_interface(const LaunchRequest& r, const std::string& nccl, std::string& warning) {
  if (!r.master_iface.empty()) return r.master_iface;
  auto here = [&](const std::string& name) { return std::find(r.interfaces.begin(), r.interfaces.end(), name) != r.interfaces.end(); };
  std::vector<std::string> named;
  if (!nccl.empty() && nccl.front() != '^') named = split(nccl.front() == '=' ? nccl.substr(1) : nccl, ',');
  for (const auto& name : named)
    if (here(name)) return name;
  if (r.interfaces.empty()) return "";
  if (!named.empty())
    warning += std::string(warning.empty() ? "" : "; ") + "NCCL_SOCKET_IFNAME names " + common::join(named, ",") +
               ", which " + (named.size() == 1 ? "is" : "are") + " not up with an IPv4 address on " + r.placement.hostname +
               "; gloo uses " + r.interfaces.front() + " (choose with --master-iface)";
  return r.interfaces.front();
}

}  // namespace

std::vector<unsigned> node_ranks(const std::vector<std::string>& hosts) {
  std::map<std::string, unsigned> index;
  std::vector<unsigned> out;
  for (const auto& h : hosts) out.push_back(index.emplace(h, static_cast<unsigned>(index.size())).first->second);
  return out;
}

LaunchPlan plan_launch(const LaunchRequest& r, const topology::NodeTopology* topo) {
  LaunchPlan plan;
  const auto& p = r.placement;
  auto nodes = node_ranks(r.rank_hosts);
  unsigned node = p.rank < nodes.size() ? nodes[p.rank] : 0;
  unsigned num_nodes = nodes.empty() ? 1 : *std::max_element(nodes.begin(), nodes.end()) + 1;
  auto num = [](auto v) { return std::to_string(v); };
  set(plan, "RANK", num(p.rank));
  set(plan, "WORLD_SIZE", num(p.size));
  set(plan, "LOCAL_RANK", num(p.local_rank));
  set(plan, "LOCAL_WORLD_SIZE", num(p.local_size));
  set(plan, "GROUP_RANK", num(node));
  set(plan, "NODE_RANK", num(node));
  set(plan, "GROUP_WORLD_SIZE", num(num_nodes));
  set(plan, "ROLE_RANK", num(p.rank));
  set(plan, "ROLE_WORLD_SIZE", num(p.size));
  set(plan, "ROLE_NAME", "default");
  set(plan, "MASTER_ADDR", r.master_addr);
  set(plan, "MASTER_PORT", num(r.master_port));
  set(plan, "TORCHELASTIC_RUN_ID", p.job_id);
  set(plan, "TORCHELASTIC_RESTART_COUNT", "0");
  set(plan, "TORCHELASTIC_MAX_RESTARTS", "0");
  // Rank 0 hosts the c10d store itself; there is no elastic agent whose store the ranks could share.
  set(plan, "TORCHELASTIC_USE_AGENT_STORE", "False");

  if (r.bind != scheduling::BindMode::none) {
    if (!topo) {
      plan.warning = "no node topology, so the task is not bound to a NIC or cores (run cnet-topo to see why)";
    } else {
      scheduling::TaskRequest t;
      t.step_gpus = r.step_gpus;
      t.local_task = p.local_rank;
      t.local_tasks = std::max(p.local_size, 1u);
      t.bind = r.bind;
      t.bind_requested = true;
      t.topology_path = r.topology_path;
      t.nccl_topo_file = r.nccl_topo_file;
      t.allocated_rdma = r.allocated_rdma;
      auto env = scheduling::plan_task_environment(*topo, t);
      if (!env.error.empty()) {
        plan.error = env.error;
        return plan;
      }
      plan.warning = env.warning;
      for (const auto& [n, v] : env.variables) set(plan, n, v);
      // Never wider than what Slurm gave the task: a cpuset or --cpu-bind keeps it inside.
      plan.cpus = scheduling::bindable_cpus(env.cpus, r.allowed_cpus);
      if (!env.cpus.empty() && plan.cpus.empty() && plan.warning.empty())
        plan.warning = "--bind strict: none of the GPU's cores (" + common::compress_ranges(env.cpus) +
                       ") are among this task's allowed CPUs; binding left as is";
      if (!plan.cpus.empty()) set(plan, "CNET_CPU_BIND", common::compress_ranges(plan.cpus));
    }
  }

  // --gpu-bind single: CUDA_VISIBLE_DEVICES narrowed to the task's GPUs, taken at the same positions of
  // the list the task got (its numbering may differ from the step's under device cgroups).
  std::string task_gpus = value_of(plan, "CNET_GPUS");
  if (r.gpu_bind == GpuBind::single && !task_gpus.empty() && !r.cuda_visible_devices.empty()) {
    auto visible = split(r.cuda_visible_devices, ',');
    std::vector<std::string> mine;
    for (const auto& g : split(task_gpus, ',')) {
      auto at = std::find(r.step_gpus.begin(), r.step_gpus.end(), static_cast<unsigned>(std::stoul(g)));
      auto pos = static_cast<std::size_t>(at - r.step_gpus.begin());
      if (at != r.step_gpus.end() && pos < visible.size()) mine.push_back(visible[pos]);
    }
    if (!mine.empty()) {
      std::string list;
      for (const auto& m : mine) list += (list.empty() ? "" : ",") + m;
      set(plan, "CUDA_VISIBLE_DEVICES", list);
    }
  }

  if (auto gloo = gloo_interface(r, value_of(plan, "NCCL_SOCKET_IFNAME"), plan.warning); !gloo.empty())
    set(plan, "GLOO_SOCKET_IFNAME", gloo);

  if (!r.omp_num_threads.empty()) {
    set(plan, "OMP_NUM_THREADS", r.omp_num_threads);
  } else {
    unsigned threads = 0;
    if (!r.cpus_per_task.empty() && r.cpus_per_task.size() < 6 &&
        std::all_of(r.cpus_per_task.begin(), r.cpus_per_task.end(), ::isdigit)) {
      threads = static_cast<unsigned>(std::stoul(r.cpus_per_task));
      // Never more than the task may run on: since Slurm 23.11 a step does not inherit the batch job's
      // --cpus-per-task, while the job's SLURM_CPUS_PER_TASK is still in its environment.
      if (!r.allowed_cpus.empty()) threads = std::min(threads, static_cast<unsigned>(r.allowed_cpus.size()));
    } else  // an even share of the node's CPUs, whatever cores the task is bound to
      threads = static_cast<unsigned>(r.allowed_cpus.size()) / std::max(p.local_size, 1u);
    set(plan, "OMP_NUM_THREADS", num(std::max(threads, 1u)));
  }
  return plan;
}

int reserve_port(const std::string& address, unsigned& port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (fd < 0 || inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(fd, 1) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) close(fd);
    throw std::runtime_error("cannot hold a port on " + address + ": " + why + " (pick another with --master-addr/--master-iface/--master-port)");
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

}  // namespace cnet::launcher
