#include "cnet/transport/perf_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace cnet::transport {

double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples.size())));
  return samples[std::clamp<std::size_t>(rank, 1, samples.size()) - 1];
}

double allreduce_bus_factor(unsigned ranks) { return ranks ? 2.0 * (ranks - 1) / ranks : 0; }

std::string to_json(const PerfReport& r) {
  nlohmann::json j = {{"schema", "cnet.perf/v1"}, {"mode", r.mode}, {"ranks", r.ranks}, {"transports", r.transports},
                      {"hosts", r.hosts}, {"results", nlohmann::json::array()}};
  for (const auto& row : r.rows)
    j["results"].push_back({{"bytes", row.bytes}, {"bandwidth_gbytes", row.bandwidth_gbytes},
                            {"bandwidth_gbits", row.bandwidth_gbytes * 8}, {"bus_gbytes", row.bus_gbytes},
                            {"latency_avg_us", row.latency_avg_us}, {"latency_p50_us", row.latency_p50_us},
                            {"latency_p99_us", row.latency_p99_us}});
  return j.dump(2) + "\n";
}

std::vector<metrics::Family> report_metrics(const PerfReport& r, int regressed_sizes, double now) {
  std::string hosts;
  for (const auto& h : r.hosts) hosts += (hosts.empty() ? "" : ",") + h;
  std::map<std::string, std::string> link{{"mode", r.mode}, {"hosts", hosts}};
  auto bytes_per_second = [&](const PerfRow& row) { return (r.mode == "p2p" ? row.bandwidth_gbytes : row.bus_gbytes) * 1e9; };
  auto sized = [&](std::size_t bytes) {
    auto l = link;
    l["bytes"] = std::to_string(bytes);
    return l;
  };
  metrics::Family bw{"cnet_perf_bandwidth_bytes_per_second", "cnet-perf bandwidth per message size (p2p: one direction; allreduce: bus bandwidth)", "gauge", {}};
  metrics::Family p99{"cnet_perf_latency_p99_seconds", "cnet-perf 99th percentile latency per message size", "gauge", {}};
  metrics::Family p50{"cnet_perf_latency_p50_seconds", "cnet-perf median latency per message size", "gauge", {}};
  for (const auto& row : r.rows) {
    bw.samples.push_back({sized(row.bytes), bytes_per_second(row)});
    p99.samples.push_back({sized(row.bytes), row.latency_p99_us * 1e-6});
    p50.samples.push_back({sized(row.bytes), row.latency_p50_us * 1e-6});
  }
  std::vector<metrics::Family> out{bw, p99, p50};
  if (!r.rows.empty()) {
    out.push_back({"cnet_perf_link_bandwidth_bytes_per_second", "cnet-perf bandwidth at the largest message size", "gauge",
                   {{link, bytes_per_second(r.rows.back())}}});
    out.push_back({"cnet_perf_link_latency_p99_seconds", "cnet-perf 99th percentile latency at the smallest message size", "gauge",
                   {{link, r.rows.front().latency_p99_us * 1e-6}}});
  }
  out.push_back({"cnet_perf_regressions", "message sizes that regressed against the saved baseline (-1: none compared)", "gauge",
                 {{link, static_cast<double>(regressed_sizes)}}});
  out.push_back({"cnet_perf_last_run_timestamp_seconds", "when cnet-perf last ran (unix time)", "gauge", {{link, now}}});
  return out;
}

PerfReport report_from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.value("schema", "") != "cnet.perf/v1") throw std::runtime_error("not a cnet-perf baseline (schema cnet.perf/v1)");
    PerfReport r;
    r.mode = j.at("mode");
    r.ranks = j.at("ranks");
    r.transports = j.at("transports");
    r.hosts = j.at("hosts").get<std::vector<std::string>>();
    for (const auto& row : j.at("results"))
      r.rows.push_back({row.at("bytes"), row.at("bandwidth_gbytes"), row.at("bus_gbytes"), row.at("latency_avg_us"),
                        row.at("latency_p50_us"), row.at("latency_p99_us")});
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("damaged cnet-perf baseline: ") + e.what());
  }
}

std::vector<std::string> regressions(const PerfReport& baseline, const PerfReport& now, double tolerance) {
  if (baseline.mode != now.mode)
    return {"baseline is a " + baseline.mode + " run, this is " + now.mode + ": nothing comparable"};
  std::map<std::size_t, const PerfRow*> base;
  for (const auto& row : baseline.rows) base[row.bytes] = &row;
  std::vector<std::string> out;
  char line[256];
  for (const auto& row : now.rows) {
    auto it = base.find(row.bytes);
    if (it == base.end()) continue;
    const PerfRow& b = *it->second;
    if (b.bandwidth_gbytes > 0 && row.bandwidth_gbytes < b.bandwidth_gbytes * (1 - tolerance)) {
      std::snprintf(line, sizeof line, "%s: bandwidth %.3f GB/s vs %.3f GB/s in the baseline (%+.0f%%)",
                    format_size(row.bytes).c_str(), row.bandwidth_gbytes, b.bandwidth_gbytes,
                    100 * (row.bandwidth_gbytes / b.bandwidth_gbytes - 1));
      out.emplace_back(line);
    }
    if (b.latency_p50_us > 0 && row.latency_p50_us > b.latency_p50_us * (1 + tolerance)) {
      std::snprintf(line, sizeof line, "%s: median latency %.2f us vs %.2f us in the baseline (%+.0f%%)",
                    format_size(row.bytes).c_str(), row.latency_p50_us, b.latency_p50_us,
                    100 * (row.latency_p50_us / b.latency_p50_us - 1));
      out.emplace_back(line);
    }
  }
  return out;
}

std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, ++u;
  return std::to_string(bytes) + " " + units[u];
}

}  // namespace cnet::transport
