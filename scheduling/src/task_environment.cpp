#include "cnet/scheduling/task_environment.hpp"

#include <algorithm>
#include <set>

#include "cnet/common/text.hpp"
#include "cnet/topology/paths.hpp"

namespace cnet::scheduling {
namespace {
using common::join;
using topology::Nic;
using topology::NicKind;

// The GPUs a task drives: an even share of the step's GPUs, or one round-robin when tasks outnumber them.
std::vector<unsigned> gpus_of_task(const TaskRequest& r) {
  const auto& g = r.step_gpus;
  if (g.empty() || r.local_tasks == 0) return {};
  if (g.size() < r.local_tasks) return {g[r.local_task % g.size()]};
  std::size_t share = g.size() / r.local_tasks;
  auto first = g.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(r.local_task * share, g.size()));
  auto last = r.local_task + 1 == r.local_tasks ? g.end() : first + static_cast<std::ptrdiff_t>(share);
  return {first, last};
}


std::vector<unsigned> cpus_of(const std::string& list) { return common::parse_ranges(list, 1u << 16).value_or(std::vector<unsigned>{}); }

}  // namespace

std::optional<BindMode> parse_bind(std::string_view v) {
  if (v == "none") return BindMode::none;
  if (v == "closest") return BindMode::closest;
  if (v == "strict") return BindMode::strict;
  return std::nullopt;
}

std::optional<NetMode> parse_net(std::string_view v) {
  if (v == "auto") return NetMode::automatic;
  if (v == "rdma") return NetMode::rdma;
  if (v == "tcp") return NetMode::tcp;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> nic_variables(const std::vector<NicChoice>& nics, bool rdma) {
  std::vector<std::string> hca, ucx, ifnames;
  for (const auto& n : nics) {
    if (rdma && !n.rdma_device.empty()) {
      hca.push_back(n.rdma_device + ":" + std::to_string(n.port));
      ucx.push_back(hca.back());
    } else if (!rdma && !n.netdev.empty()) {
      ucx.push_back(n.netdev);
    }
    if (!n.netdev.empty()) ifnames.push_back(n.netdev);
  }
  std::vector<std::pair<std::string, std::string>> vars;
  if (!hca.empty()) vars.emplace_back("NCCL_IB_HCA", "=" + join(hca, ","));
  if (!ucx.empty()) vars.emplace_back("UCX_NET_DEVICES", join(ucx, ","));
  if (!ifnames.empty()) vars.emplace_back("NCCL_SOCKET_IFNAME", "=" + join(ifnames, ","));
  return vars;
}

TaskEnvironment plan_task_environment(const topology::NodeTopology& topo, const TaskRequest& r) {
  TaskEnvironment env;
  auto& vars = env.variables;
  if (!r.topology_path.empty()) vars.emplace_back("CNET_TOPOLOGY", r.topology_path);
  if (!r.template_name.empty()) vars.emplace_back("CNET_TEMPLATE", r.template_name);
  if (!r.nccl_topo_file.empty()) vars.emplace_back("NCCL_TOPO_FILE", r.nccl_topo_file);

  bool node_has_rdma = std::any_of(topo.nics.begin(), topo.nics.end(), [](const Nic& n) { return n.is_rdma(); });
  if (r.net == NetMode::rdma && !node_has_rdma) {
    env.error = "--cnet-net=rdma but node " + topo.hostname + " has no RDMA NIC (" +
                std::to_string(topo.nics.size()) + " NICs, none InfiniBand/RoCE); use --cnet-net=auto or tcp";
    return env;
  }
  auto allocated = [&](const Nic& n) {
    return r.allocated_rdma.empty() || std::find(r.allocated_rdma.begin(), r.allocated_rdma.end(), n.rdma_device) != r.allocated_rdma.end();
  };
  bool have_allocated = std::any_of(topo.nics.begin(), topo.nics.end(), [&](const Nic& n) { return n.is_rdma() && allocated(n); });
  bool use_rdma = r.net != NetMode::tcp && node_has_rdma && have_allocated;
  bool keep_gres_nics = !r.allocated_rdma.empty() && !have_allocated && r.net != NetMode::tcp;
  bool keep_users_nics = r.user_nic_variables && !r.inherited_nics && !r.bind_requested && !r.net_requested;

  // A GPU Slurm allocated but discovery did not see (gres.conf out of date, no driver) gets no binding;
  // cnet's own gap must not fail the user's job, but an explicit --cnet-bind hears about it.
  std::vector<unsigned> gpus;
  for (unsigned g : gpus_of_task(r)) {
    if (g < topo.gpus.size()) {
      gpus.push_back(g);
    } else if (r.bind_requested && env.warning.empty()) {
      env.warning = "GPU " + std::to_string(g) + " of this step is not among the " + std::to_string(topo.gpus.size()) +
                    " GPUs cnet found on " + topo.hostname +
                    ", so it is not bound; compare gres.conf with cnet-topo --format gres";
    }
  }
  if (!gpus.empty()) {
    std::vector<std::string> names;
    for (unsigned g : gpus) names.push_back(std::to_string(g));
    vars.emplace_back("CNET_GPUS", join(names, ","));
  }

  // The task's NICs: for bind modes, the NICs paired with its GPUs; else (or without GPUs) every NIC of
  // the chosen kind, letting the libraries choose among them.
  std::vector<const Nic*> nics;
  // A DOWN or INIT port is never handed to a task: the job would die on it.
  auto wanted = [&](const Nic& n) { return topology::usable(n) && (use_rdma ? n.is_rdma() && allocated(n) : !n.netdev.empty()); };
  if (keep_gres_nics || keep_users_nics) {
    // gres/rdma set the task's NICs to devices this topology does not describe, or the user chose them
    // and asked cnet for nothing: leave them.
  } else if (r.bind != BindMode::none && !gpus.empty()) {
    auto pairs = topology::pair_gpus_with_nics(topo);
    for (unsigned g : gpus) {
      // pair_gpus_with_nics prefers RDMA; with tcp re-pick the closest NIC that has a netdev.
      const Nic* best = nullptr;
      if (use_rdma && pairs[g].nic >= 0 && allocated(topo.nics[pairs[g].nic])) best = &topo.nics[pairs[g].nic];
      else
        for (const auto& n : topo.nics)
          if (wanted(n) && (!best || topology::classify(topo.gpus[g], n).level < topology::classify(topo.gpus[g], *best).level))
            best = &n;
      if (best && std::find(nics.begin(), nics.end(), best) == nics.end()) nics.push_back(best);
    }
  } else if (r.bind != BindMode::none) {
    for (const auto& n : topo.nics)
      if (wanted(n)) nics.push_back(&n);
  }

  if (!nics.empty()) {
    std::vector<std::string> names;
    std::vector<NicChoice> chosen;
    for (const Nic* n : nics) {
      names.push_back(n->name);
      chosen.push_back({n->name, n->rdma_device, n->port, n->netdev});
    }
    vars.emplace_back("CNET_NICS", join(names, ","));
    for (auto& v : nic_variables(chosen, use_rdma)) vars.push_back(std::move(v));
  } else if (r.inherited_nics && !keep_gres_nics) {
    env.unset = {"CNET_NICS", "NCCL_IB_HCA", "UCX_NET_DEVICES", "NCCL_SOCKET_IFNAME"};
  }
  if (r.net == NetMode::tcp) {
    vars.emplace_back("UCX_TLS", "tcp,sm,self");
    vars.emplace_back("NCCL_IB_DISABLE", "1");
  }

  if (r.bind == BindMode::strict && !gpus.empty()) {
    std::set<unsigned> cpus;
    for (unsigned g : gpus)
      for (unsigned c : cpus_of(topo.gpus[g].locality.cpuset)) cpus.insert(c);
    env.cpus.assign(cpus.begin(), cpus.end());
    if (!env.cpus.empty()) vars.emplace_back("CNET_CPU_BIND", common::compress_ranges(env.cpus));
  }
  return env;
}

}  // namespace cnet::scheduling
