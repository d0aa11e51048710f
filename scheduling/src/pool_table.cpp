#include "cnet/scheduling/pool_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "cnet/common/text.hpp"
#include "cnet/topology/features.hpp"

namespace cnet::scheduling {

GpuCount parse_gpu_gres(const std::string& gres) {
  // entries are separated by ',' outside parentheses: gpu:a100:4(S:0-1),rdma:2
  GpuCount out;
  std::string entry;
  int depth = 0;
  auto take = [&](const std::string& e) {
    static const std::regex re("gpu(?::(\\(null\\)|[^:(]+))?:([0-9]+)(?:\\(.*\\))?");
    std::smatch m;
    if (!std::regex_match(e, m, re)) return;
    out.count += static_cast<unsigned>(std::stoul(m[2]));
    std::string model = m[1].matched ? m[1].str() : "";
    if (model != "(null)" && out.model.empty()) out.model = model;
  };
  for (char c : gres) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      take(entry);
      entry.clear();
    } else {
      entry += c;
    }
  }
  take(entry);
  return out;
}

std::string feature_matching(const std::string& features, const std::string& kind) {
  for (const auto& f : common::split(features))
    if (kind == "gpumem" ? topology::parse_memory_class(f).has_value() : topology::parse_fabric_feature(f).has_value()) return f;
  return "";
}

std::string format_table(const std::vector<PoolRow>& rows) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %-10s %-16s %9s %-10s %-8s %9s %13s  %s\n", "NODE", "STATE", "GPU", "GPUS used",
                "GPU MEM", "FABRIC", "CPUS used", "MEM(MB) used", "REASON");
  out << line;
  unsigned gt = 0, gu = 0, ct = 0, cu = 0, held = 0;
  for (const auto& r : rows) {
    std::string reason = r.reason;
    for (const auto& s : r.stuck) reason += (reason.empty() ? "" : "; ") + std::string("stuck: ") + s;
    held += !r.stuck.empty();
    std::snprintf(line, sizeof line, "%-12s %-10s %-16s %4u/%-4u %-10s %-8s %4u/%-4u %6llu/%-6llu  %s\n", r.node.c_str(),
                  r.state.c_str(), r.gpu_model.empty() ? "-" : r.gpu_model.c_str(), r.gpus_used, r.gpus_total,
                  r.gpu_memory.empty() ? "-" : r.gpu_memory.c_str(), r.fabric.empty() ? "-" : r.fabric.c_str(), r.cpus_alloc,
                  r.cpus_total, static_cast<unsigned long long>(r.memory_alloc_mb), static_cast<unsigned long long>(r.memory_mb),
                  reason.c_str());
    out << line;
    gt += r.gpus_total, gu += r.gpus_used, ct += r.cpus_total, cu += r.cpus_alloc;
  }
  std::snprintf(line, sizeof line, "%u nodes: %u of %u GPUs in use, %u free; %u of %u CPUs in use",
                static_cast<unsigned>(rows.size()), gu, gt, gt - gu, cu, ct);
  out << line;
  if (held) out << "; " << held << (held == 1 ? " node" : " nodes") << " held by stuck jobs";
  out << "\n";
  return out.str();
}

std::string to_json(const std::vector<PoolRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows)
    j.push_back({{"node", r.node}, {"state", r.state}, {"reason", r.reason}, {"gpu_model", r.gpu_model},
                 {"gpus_total", r.gpus_total}, {"gpus_used", r.gpus_used}, {"gpus_free", r.gpus_total - std::min(r.gpus_used, r.gpus_total)},
                 {"gpu_memory", r.gpu_memory}, {"fabric", r.fabric}, {"cpus_total", r.cpus_total}, {"cpus_alloc", r.cpus_alloc},
                 {"memory_mb", r.memory_mb}, {"memory_alloc_mb", r.memory_alloc_mb}, {"stuck", r.stuck}});
  return j.dump(2) + "\n";
}

std::vector<common::MetricFamily> pool_metrics(const std::vector<PoolRow>& rows, double now) {
  using common::MetricFamily;
  MetricFamily state{"cnet_pool_node_state", "the node's state in slurmctld (1 for the state it is in)", "gauge", {}};
  MetricFamily gpus{"cnet_pool_gpus", "GPUs per node in all", "gauge", {}}, gpus_used{"cnet_pool_gpus_used", "GPUs per node held by jobs", "gauge", {}};
  MetricFamily cpus{"cnet_pool_cpus", "CPUs per node in all", "gauge", {}}, cpus_used{"cnet_pool_cpus_used", "CPUs per node held by jobs", "gauge", {}};
  MetricFamily memory{"cnet_pool_memory_bytes", "memory per node for jobs (RealMemory)", "gauge", {}},
      memory_used{"cnet_pool_memory_used_bytes", "memory per node held by jobs", "gauge", {}};
  MetricFamily stuck{"cnet_pool_stuck_jobs", "jobs holding the node long past their end", "gauge", {}};
  for (const auto& r : rows) {
    const std::map<std::string, std::string> node{{"node", r.node}};
    state.samples.push_back({{{"node", r.node}, {"state", r.state}, {"gpu_model", r.gpu_model}, {"fabric", r.fabric}}, 1});
    gpus.samples.push_back({node, static_cast<double>(r.gpus_total)});
    gpus_used.samples.push_back({node, static_cast<double>(std::min(r.gpus_used, r.gpus_total))});
    cpus.samples.push_back({node, static_cast<double>(r.cpus_total)});
    cpus_used.samples.push_back({node, static_cast<double>(r.cpus_alloc)});
    memory.samples.push_back({node, static_cast<double>(r.memory_mb) * 1048576});
    memory_used.samples.push_back({node, static_cast<double>(r.memory_alloc_mb) * 1048576});
    stuck.samples.push_back({node, static_cast<double>(r.stuck.size())});
  }
  return {state, gpus, gpus_used, cpus, cpus_used, memory, memory_used, stuck,
          {"cnet_pool_last_run_timestamp_seconds", "when cnet-pool last read the pool (unix time)", "gauge", {{{}, now}}}};
}

}  // namespace cnet::scheduling
