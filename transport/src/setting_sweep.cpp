#include "cnet/transport/setting_sweep.hpp"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "cnet/common/text.hpp"

namespace cnet::transport {

SettingSweep parse_setting_sweep(const std::string& argument) {
  auto eq = argument.find('=');
  if (eq == std::string::npos)
    throw std::invalid_argument("--sweep '" + common::printable(argument, 60) + "' needs VARIABLE=v1,v2,... (e.g. UCX_RC_TX_QUEUE_LEN=256,512,1024)");
  SettingSweep s{argument.substr(0, eq), {}};
  if (s.variable.starts_with("NCCL_"))
    throw std::invalid_argument("--sweep " + s.variable + ": cnet-perf measures cnet's UCX channel, which does not read NCCL settings; "
                                "sweep them with nccl-tests (see the README's tuning section)");
  static const std::regex name("UCX_[A-Z0-9_]{1,64}");
  if (!std::regex_match(s.variable, name))
    throw std::invalid_argument("--sweep '" + common::printable(s.variable, 60) + "' is not a UCX setting (UCX_NAME in capitals, e.g. UCX_RC_TX_QUEUE_LEN)");
  static const std::regex value("[A-Za-z0-9_.:+-]{1,64}");
  std::set<std::string> seen;
  for (const auto& v : common::split(argument.substr(eq + 1), ',')) {
    if (!std::regex_match(v, value))
      throw std::invalid_argument("--sweep " + s.variable + ": value '" + common::printable(v, 60) +
                                  "' is empty or not a plain setting value (letters, digits, . : _ + -)");
    if (!seen.insert(v).second) throw std::invalid_argument("--sweep " + s.variable + ": value " + v + " is given twice");
    s.values.push_back(v);
  }
  if (s.values.empty() || s.values.size() > 16)
    throw std::invalid_argument("--sweep " + s.variable + " needs 1 to 16 values, comma-separated (got " + std::to_string(s.values.size()) + ")");
  return s;
}

ScopedSetting::ScopedSetting(const std::string& variable, const std::string& value) : variable_(variable) {
  if (const char* old = std::getenv(variable.c_str())) had_ = true, before_ = old;
  ::setenv(variable.c_str(), value.c_str(), 1);
}

ScopedSetting::~ScopedSetting() {
  if (had_) ::setenv(variable_.c_str(), before_.c_str(), 1);
  else ::unsetenv(variable_.c_str());
}

std::string ucx_refusal(const std::string& variable, const std::string& value) {
  // UCX parses its own settings when the context is made and the transports' ones when the worker opens
  // them; a worker is the cheapest thing that reads both.
  ScopedSetting applied(variable, value);
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return "UCX could not read its settings with " + variable + "=" + value;
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context = nullptr;
  ucs_status_t s = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (s != UCS_OK) return "UCX refused " + variable + "=" + value + ": " + ucs_status_string(s);
  ucp_worker_params_t wparams{};
  ucp_worker_h worker = nullptr;
  s = ucp_worker_create(context, &wparams, &worker);
  if (s == UCS_OK) ucp_worker_destroy(worker);
  ucp_cleanup(context);
  return s == UCS_OK ? "" : "UCX refused " + variable + "=" + value + ": " + ucs_status_string(s);
}

std::vector<std::size_t> best_by_p99(const std::vector<SweepPoint>& points) {
  std::vector<std::size_t> best;
  if (points.empty()) return best;
  for (std::size_t row = 0; row < points.front().report.rows.size(); ++row) {
    std::size_t winner = 0;
    for (std::size_t i = 1; i < points.size(); ++i) {
      if (row >= points[i].report.rows.size()) continue;
      const PerfRow &a = points[i].report.rows[row], &b = points[winner].report.rows[row];
      if (a.latency_p99_us < b.latency_p99_us || (a.latency_p99_us == b.latency_p99_us && a.bandwidth_gbytes > b.bandwidth_gbytes)) winner = i;
    }
    best.push_back(winner);
  }
  return best;
}

std::string sweep_table(const std::string& variable, const std::vector<SweepPoint>& points) {
  std::size_t width = variable.size();
  for (const auto& p : points) width = std::max(width, p.value.size());
  auto pad = [&](const std::string& s) { return s + std::string(width - s.size(), ' '); };
  std::string mode = points.empty() ? "p2p" : points.front().report.mode;
  auto header = common::split(table_header(mode), '\n');
  std::string out = "# " + pad(variable) + header[0].substr(1) + "\n# " + pad("") + header[1].substr(1) + "\n";
  auto best = best_by_p99(points);
  for (std::size_t row = 0; row < best.size(); ++row)
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (row >= points[i].report.rows.size()) continue;
      std::string line = table_row(mode, points[i].report.rows[row]);
      line.pop_back();  // its newline
      out += "  " + pad(points[i].value) + line.substr(1) + (best[row] == i ? "   <- best P99" : "") + "\n";
    }
  return out;
}

std::string sweep_json(const std::string& variable, const std::vector<SweepPoint>& points) {
  using json = nlohmann::json;
  json j = {{"schema", "cnet.perf.sweep/v1"}, {"variable", variable}, {"points", json::array()}, {"best_by_p99", json::array()}};
  for (const auto& p : points) j["points"].push_back({{"value", p.value}, {"report", json::parse(to_json(p.report))}});
  auto best = best_by_p99(points);
  for (std::size_t row = 0; row < best.size(); ++row)
    j["best_by_p99"].push_back({{"bytes", points[best[row]].report.rows[row].bytes}, {"value", points[best[row]].value}});
  return j.dump(2) + "\n";
}

}  // namespace cnet::transport
