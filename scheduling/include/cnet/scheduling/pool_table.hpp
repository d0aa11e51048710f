#pragma once
// The resource-pool table behind cnet-pool: one row per node from what slurmctld reports (gres,
// gres_used, features, CPUs, memory, state), parsed here so the rules are tested without a cluster.

#include <cstdint>
#include <string>
#include <vector>

#include "cnet/common/prometheus.hpp"

namespace cnet::scheduling {

struct PoolRow {
  std::string node, state, reason;
  std::string gpu_model;          // gres type ("" when untyped)
  unsigned gpus_total = 0, gpus_used = 0;
  std::string gpu_memory;         // "gpumem80g" from the node's features
  std::string fabric;             // "ib200", "roce100", "eth10" from the node's features
  unsigned cpus_total = 0, cpus_alloc = 0;
  std::uint64_t memory_mb = 0, memory_alloc_mb = 0;
  std::vector<std::string> stuck = {};  // jobs holding it long past their end (stuck_jobs.hpp), described
};

struct GpuCount {
  std::string model;
  unsigned count = 0;
};
// "gpu:a100:4(S:0-1),rdma:2" -> {a100, 4}; "gpu:(null):1(IDX:0)" -> {"", 1}; no gpu entry -> {"", 0}.
GpuCount parse_gpu_gres(const std::string& gres);
// First feature of the form gpumem<N>g, and of <ib|roce|eth><N>.
std::string feature_matching(const std::string& features, const std::string& kind);  // kind: "gpumem" or "fabric"

std::string format_table(const std::vector<PoolRow>& rows);
std::string to_json(const std::vector<PoolRow>& rows);
// The table as Prometheus gauges for node_exporter's textfile collector (cnet-pool --prometheus): per
// node its state (cnet_pool_node_state, 1 for the state it is in, with its GPU model and fabric), GPUs,
// CPUs and memory in use and in all, jobs stuck on it; and when the table was read.
std::vector<common::MetricFamily> pool_metrics(const std::vector<PoolRow>& rows, double now);

}  // namespace cnet::scheduling
