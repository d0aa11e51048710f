#pragma once
// Link and collective numbers: one row per message size, latency percentiles, the nccl-tests bandwidth
// definitions, a table whose columns are defined once for text and JSON, baselines saved as JSON and
// one regression rule for everything that compares against them (cnet-perf, cnet-doctor --job).

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "cnet/common/prometheus.hpp"

namespace cnet::transport {

struct PerfRow {
  std::size_t bytes = 0;
  double bandwidth_gbytes = 0;  // GB/s (1e9 bytes); p2p: one direction; allreduce: algbw
  double bus_gbytes = 0;        // allreduce busbw = algbw * 2(n-1)/n; p2p: same as bandwidth
  double latency_avg_us = 0, latency_p50_us = 0, latency_p99_us = 0;  // p2p: half round trip; allreduce: per call
  long long wrong = -1;         // allreduce: elements that differ from the expected sum; -1 not checked
};

struct PerfReport {
  std::string mode;  // "p2p" or "allreduce"
  unsigned ranks = 0;
  std::string transports;
  std::vector<std::string> hosts;  // every rank's host, in rank order (p2p: the two measured)
  std::vector<PerfRow> rows;
  // Per host, its NICs' drivers and firmware ("eth0 mlx5_core 5.8-1.0.1 firmware 16.35.2000"): a baseline
  // keeps them so a later regression can say the driver changed in between. Empty when not recorded.
  std::map<std::string, std::string> nic_drivers = {};
};

// The p-th percentile (0..100) by nearest rank of a non-empty sample.
double percentile(std::vector<double> samples, double p);
double allreduce_bus_factor(unsigned ranks);  // 2(n-1)/n

// The table as people read it: a header of column names with units on a second line, then one line per
// row. The same columns name the JSON fields, so text and JSON cannot disagree.
std::string table_header(const std::string& mode);
std::string table_row(const std::string& mode, const PerfRow& row);

std::string to_json(const PerfReport& report);         // schema cnet.perf/v1, one report
PerfReport report_from_json(const std::string& text);  // throws std::runtime_error naming the problem

// A baseline file holds one report per link or job shape measured (schema cnet.perf.baseline/v1); a
// single cnet.perf/v1 report (what older cnet-perf --save-baseline wrote) reads as a baseline of one.
std::string baseline_json(const std::vector<PerfReport>& reports);
std::vector<PerfReport> baseline_from_json(const std::string& text);  // throws std::runtime_error
// The report in `baseline` that `now` is compared with: same mode and hosts; else, when the baseline
// holds exactly one report of that mode, that one (a baseline saved for a kind of link); else nullptr.
const PerfReport* matching_baseline(const std::vector<PerfReport>& baseline, const PerfReport& now);

// Sizes whose bandwidth fell, or whose median latency rose, by more than `tolerance` (0.1 = 10%)
// against the baseline; one line each, empty when nothing regressed.
std::vector<std::string> regressions(const PerfReport& baseline, const PerfReport& now, double tolerance);

// Hosts whose NIC drivers or firmware differ from what the baseline recorded, one line each
// ("cn2: eth0 mlx5_core 5.8 -> eth0 mlx5_core 23.10"); hosts either side did not record are left out.
std::vector<std::string> driver_changes(const PerfReport& baseline, const PerfReport& now);

// Per message size: cnet_perf_bandwidth_bytes_per_second, cnet_perf_latency_p99_seconds and
// cnet_perf_latency_p50_seconds {mode, hosts, bytes}; per link: cnet_perf_link_bandwidth_bytes_per_second
// (largest size), cnet_perf_link_latency_p99_seconds (smallest size), cnet_perf_regressions (sizes that
// regressed against the baseline, -1 when none was compared) and cnet_perf_last_run_timestamp_seconds.
std::vector<common::MetricFamily> report_metrics(const PerfReport& report, int regressed_sizes, double now);

// The network device a report's transports name ("tcp/eth0" -> "eth0", "rc_mlx5/mlx5_0:1,ud_mlx5/mlx5_0:1"
// -> "mlx5_0:1"); "" when the traffic stayed in memory ("sysv/memory,cma/memory", "self").
std::string network_device_of(const std::string& transports);

std::string format_size(std::size_t bytes);  // "4 MiB", "512 B"

}  // namespace cnet::transport
