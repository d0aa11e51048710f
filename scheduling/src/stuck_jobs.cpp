#include "cnet/scheduling/stuck_jobs.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "cnet/common/slurm_config.hpp"
#include "cnet/common/text.hpp"

namespace cnet::scheduling {

std::string format_duration(std::int64_t s) {
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min";
  if (s < 86400) return std::to_string(s / 3600) + " h" + (s % 3600 >= 60 ? " " + std::to_string(s % 3600 / 60) + " min" : "");
  return std::to_string(s / 86400) + " d" + (s % 86400 >= 3600 ? " " + std::to_string(s % 86400 / 3600) + " h" : "");
}

std::string StuckJob::describe() const {
  std::string who = "job " + job_id + (user.empty() ? "" : " (" + user + ")");
  return completing ? who + " completing for " + format_duration(seconds) : who + " running " + format_duration(seconds) + " past its end";
}

std::map<std::string, std::vector<StuckJob>> stuck_jobs(const std::vector<HeldJob>& jobs, std::int64_t now, std::int64_t threshold_s) {
  std::map<std::string, std::vector<StuckJob>> out;
  for (const auto& j : jobs) {
    if (j.end_time <= 0 || now - j.end_time <= threshold_s) continue;
    for (const auto& node : j.nodes) out[node].push_back({j.job_id, j.user, j.completing, now - j.end_time});
  }
  for (auto& [node, list] : out)
    std::sort(list.begin(), list.end(), [](const StuckJob& a, const StuckJob& b) { return a.seconds > b.seconds; });
  return out;
}

std::vector<HeldJob> parse_squeue_jobs(const std::string& text) {
  std::vector<HeldJob> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = common::split(common::trim(line), '|');
    if (f.size() != 5 || (f[1] != "RUNNING" && f[1] != "COMPLETING")) continue;
    HeldJob j;
    j.job_id = f[0];
    j.completing = f[1] == "COMPLETING";
    // "N/A", "Unknown" or a date in another format: unknown
    const std::string& end = f[2];
    auto [stop, ec] = std::from_chars(end.data(), end.data() + end.size(), j.end_time);
    if (ec != std::errc() || stop != end.data() + end.size() || end.size() > 12 || j.end_time < 0) j.end_time = 0;
    j.user = f[3];
    try {
      j.nodes = common::expand_hostlist(f[4]);
    } catch (const common::ConfigError&) {
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace cnet::scheduling
