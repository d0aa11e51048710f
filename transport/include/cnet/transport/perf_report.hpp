#pragma once
// cnet-perf's numbers: one row per message size, latency percentiles, the nccl-tests bandwidth
// definitions, and baselines saved as JSON and compared with a tolerance.

#include <cstddef>
#include <string>
#include <vector>

#include "cnet/metrics/prometheus.hpp"

namespace cnet::transport {

struct PerfRow {
  std::size_t bytes = 0;
  double bandwidth_gbytes = 0;  // GB/s (1e9 bytes); p2p: one direction; allreduce: algbw
  double bus_gbytes = 0;        // allreduce busbw = algbw * 2(n-1)/n; p2p: same as bandwidth
  double latency_avg_us = 0, latency_p50_us = 0, latency_p99_us = 0;  // p2p: half round trip; allreduce: per call
};

struct PerfReport {
  std::string mode;  // "p2p" or "allreduce"
  unsigned ranks = 0;
  std::string transports;
  std::vector<std::string> hosts;
  std::vector<PerfRow> rows;
};

// The p-th percentile (0..100) by nearest rank of a non-empty sample.
double percentile(std::vector<double> samples, double p);
double allreduce_bus_factor(unsigned ranks);  // 2(n-1)/n

std::string to_json(const PerfReport& report);
PerfReport report_from_json(const std::string& text);  // throws std::runtime_error naming the problem

// Sizes whose bandwidth fell, or whose median latency rose, by more than `tolerance` (0.1 = 10%)
// against the baseline; one line each, empty when nothing regressed.
std::vector<std::string> regressions(const PerfReport& baseline, const PerfReport& now, double tolerance);

// Per message size: cnet_perf_bandwidth_bytes_per_second, cnet_perf_latency_p99_seconds and
// cnet_perf_latency_p50_seconds {mode, hosts, bytes}; per link: cnet_perf_link_bandwidth_bytes_per_second
// (largest size), cnet_perf_link_latency_p99_seconds (smallest size), cnet_perf_regressions (sizes that
// regressed against the baseline, -1 when none was compared) and cnet_perf_last_run_timestamp_seconds.
std::vector<metrics::Family> report_metrics(const PerfReport& report, int regressed_sizes, double now);

std::string format_size(std::size_t bytes);  // "4 MiB", "512 B"

}  // namespace cnet::transport
