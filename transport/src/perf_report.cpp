#include "cnet/transport/perf_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cnet/common/text.hpp"

namespace cnet::transport {
namespace {

using json = nlohmann::json;

// One column of the table: its JSON field, its header (name, then unit) and how to print it.
struct Column {
  const char* field;
  const char* name;
  const char* unit;
  int decimals;  // -1: a whole number
  double (*value)(const PerfRow&);
};

const std::vector<Column>& columns(const std::string& mode) {
  static const std::vector<Column> p2p = {
      {"bytes", "size", "(B)", -1, [](const PerfRow& r) { return static_cast<double>(r.bytes); }},
      {"bandwidth_gbytes", "bandwidth", "(GB/s)", 3, [](const PerfRow& r) { return r.bandwidth_gbytes; }},
      {"bandwidth_gbits", "bandwidth", "(Gb/s)", 2, [](const PerfRow& r) { return r.bandwidth_gbytes * 8; }},
      {"latency_avg_us", "lat.avg", "(us)", 2, [](const PerfRow& r) { return r.latency_avg_us; }},
      {"latency_p50_us", "lat.p50", "(us)", 2, [](const PerfRow& r) { return r.latency_p50_us; }},
      {"latency_p99_us", "lat.p99", "(us)", 2, [](const PerfRow& r) { return r.latency_p99_us; }},
  };
  static const std::vector<Column> allreduce = {
      {"bytes", "size", "(B)", -1, [](const PerfRow& r) { return static_cast<double>(r.bytes); }},
      {"count", "count", "(floats)", -1, [](const PerfRow& r) { return static_cast<double>(r.bytes / sizeof(float)); }},
      {"latency_avg_us", "time.avg", "(us)", 2, [](const PerfRow& r) { return r.latency_avg_us; }},
      {"bandwidth_gbytes", "algbw", "(GB/s)", 3, [](const PerfRow& r) { return r.bandwidth_gbytes; }},
      {"bus_gbytes", "busbw", "(GB/s)", 3, [](const PerfRow& r) { return r.bus_gbytes; }},
      {"latency_p50_us", "time.p50", "(us)", 2, [](const PerfRow& r) { return r.latency_p50_us; }},
      {"latency_p99_us", "time.p99", "(us)", 2, [](const PerfRow& r) { return r.latency_p99_us; }},
      {"wrong", "#wrong", "", -1, [](const PerfRow& r) { return static_cast<double>(r.wrong); }},
  };
  return mode == "allreduce" ? allreduce : p2p;
}

constexpr int kWidth = 12;

std::string cell(const Column& c, const PerfRow& r) {
  char buf[64];
  double v = c.value(r);
  if (std::string(c.field) == "wrong" && v < 0) return "n/a";
  if (c.decimals < 0) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.*f", c.decimals, v);
  return buf;
}

// A cell right-aligned in its column, with the space that separates it from the one before.
std::string aligned(const std::string& s) {
  return " " + std::string(static_cast<std::size_t>(std::max(0, kWidth - static_cast<int>(s.size()))), ' ') + s;
}

PerfReport report_from(const json& j) {
  PerfReport r;
  r.mode = j.at("mode");
  r.ranks = j.at("ranks");
  r.transports = j.value("transports", "");
  r.hosts = j.at("hosts").get<std::vector<std::string>>();
  for (const auto& row : j.at("results")) {
    PerfRow p;
    p.bytes = row.at("bytes");
    p.bandwidth_gbytes = row.value("bandwidth_gbytes", 0.0);
    p.bus_gbytes = row.value("bus_gbytes", p.bandwidth_gbytes);
    p.latency_avg_us = row.value("latency_avg_us", 0.0);
    p.latency_p50_us = row.value("latency_p50_us", 0.0);
    p.latency_p99_us = row.value("latency_p99_us", 0.0);
    p.wrong = row.value("wrong", -1LL);
    r.rows.push_back(p);
  }
  if (j.contains("nic_drivers")) r.nic_drivers = j.at("nic_drivers").get<std::map<std::string, std::string>>();
  return r;
}

json report_json(const PerfReport& r) {
  json j = {{"mode", r.mode}, {"ranks", r.ranks}, {"transports", r.transports}, {"hosts", r.hosts}, {"results", json::array()}};
  for (const auto& row : r.rows) {
    json out = json::object();
    for (const auto& c : columns(r.mode)) {
      double v = c.value(row);
      if (c.decimals < 0) out[c.field] = static_cast<long long>(v);
      else out[c.field] = v;
    }
    j["results"].push_back(out);
  }
  if (!r.nic_drivers.empty()) j["nic_drivers"] = r.nic_drivers;
  return j;
}

template <typename F>
auto parsed(const std::string& what, F&& body) {
  try {
    return body();
  } catch (const json::exception& e) {
    throw std::runtime_error("damaged " + what + ": " + e.what());
  }
}

}  // namespace

double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples.size())));
  return samples[std::clamp<std::size_t>(rank, 1, samples.size()) - 1];
}

std::vector<std::string> driver_changes(const PerfReport& baseline, const PerfReport& now) {
  std::vector<std::string> out;
  for (const auto& [host, drivers] : now.nic_drivers)
    if (auto was = baseline.nic_drivers.find(host); was != baseline.nic_drivers.end() && was->second != drivers)
      out.push_back(host + ": " + was->second + " -> " + drivers);
  return out;
}

double allreduce_bus_factor(unsigned ranks) { return ranks ? 2.0 * (ranks - 1) / ranks : 0; }

std::string table_header(const std::string& mode) {
  std::string names = "#", units = "#";
  for (const auto& c : columns(mode)) names += aligned(c.name), units += aligned(c.unit);
  return names + "\n" + units + "\n";
}

std::string table_row(const std::string& mode, const PerfRow& row) {
  std::string line = " ";
  for (const auto& c : columns(mode)) line += aligned(cell(c, row));
  return line + "\n";
}

std::string to_json(const PerfReport& r) {
  json j = report_json(r);
  j["schema"] = "cnet.perf/v1";
  return j.dump(2) + "\n";
}

PerfReport report_from_json(const std::string& text) {
  return parsed("cnet-perf report", [&] {
    auto j = json::parse(text);
    if (!j.is_object() || j.value("schema", "") != "cnet.perf/v1") throw std::runtime_error("not a cnet-perf report (schema cnet.perf/v1)");
    return report_from(j);
  });
}

std::string baseline_json(const std::vector<PerfReport>& reports) {
  json j = {{"schema", "cnet.perf.baseline/v1"}, {"reports", json::array()}};
  for (const auto& r : reports) j["reports"].push_back(report_json(r));
  return j.dump(2) + "\n";
}

std::vector<PerfReport> baseline_from_json(const std::string& text) {
  return parsed("baseline", [&] {
    auto j = json::parse(text);
    std::string schema = j.is_object() ? j.value("schema", "") : "";
    if (schema == "cnet.perf/v1") return std::vector<PerfReport>{report_from(j)};
    if (schema != "cnet.perf.baseline/v1")
      throw std::runtime_error("not a cnet baseline (schema cnet.perf.baseline/v1; save one with --save-baseline)");
    std::vector<PerfReport> out;
    for (const auto& r : j.at("reports")) out.push_back(report_from(r));
    return out;
  });
}

const PerfReport* matching_baseline(const std::vector<PerfReport>& baseline, const PerfReport& now) {
  const PerfReport* only = nullptr;
  unsigned same_mode = 0;
  for (const auto& b : baseline) {
    if (b.mode != now.mode) continue;
    if (b.hosts == now.hosts) return &b;
    ++same_mode;
    only = &b;
  }
  return same_mode == 1 ? only : nullptr;
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

std::vector<common::MetricFamily> report_metrics(const PerfReport& r, int regressed_sizes, double now) {
  std::map<std::string, std::string> link{{"mode", r.mode}, {"hosts", common::join(r.hosts, ",")}};
  auto bytes_per_second = [&](const PerfRow& row) { return (r.mode == "p2p" ? row.bandwidth_gbytes : row.bus_gbytes) * 1e9; };
  auto sized = [&](std::size_t bytes) {
    auto l = link;
    l["bytes"] = std::to_string(bytes);
    return l;
  };
  common::MetricFamily bw{"cnet_perf_bandwidth_bytes_per_second", "cnet-perf bandwidth per message size (p2p: one direction; allreduce: bus bandwidth)", "gauge", {}};
  common::MetricFamily p99{"cnet_perf_latency_p99_seconds", "cnet-perf 99th percentile latency per message size", "gauge", {}};
  common::MetricFamily p50{"cnet_perf_latency_p50_seconds", "cnet-perf median latency per message size", "gauge", {}};
  for (const auto& row : r.rows) {
    bw.samples.push_back({sized(row.bytes), bytes_per_second(row)});
    p99.samples.push_back({sized(row.bytes), row.latency_p99_us * 1e-6});
    p50.samples.push_back({sized(row.bytes), row.latency_p50_us * 1e-6});
  }
  std::vector<common::MetricFamily> out{bw, p99, p50};
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

std::string network_device_of(const std::string& transports) {
  for (const auto& lane : common::split(transports, ',')) {
    auto slash = lane.find('/');
    if (slash == std::string::npos) continue;
    std::string device = lane.substr(slash + 1);
    if (device != "memory" && !device.empty()) return device;
  }
  return "";
}

std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, ++u;
  return std::to_string(bytes) + " " + units[u];
}

}  // namespace cnet::transport
