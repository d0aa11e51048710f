#include "cnet/inference/compute_trace.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace cnet::inference {

double ComputeClock::seconds() const {
  std::int64_t us = 0;
  for (const auto& s : spans_) us += s.end_us - s.start_us;
  return static_cast<double>(us) / 1e6;
}

std::string chrome_trace(const std::vector<RankTrace>& ranks) {
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (const auto& r : ranks)
    for (const auto& s : r.spans) origin = std::min(origin, s.start_us);
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t pid = 0; pid < ranks.size(); ++pid) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", ranks[pid].label}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    for (const auto& s : ranks[pid].spans) {
      bool finish = s.micro_batch == ComputeSpan::kFinish;
      nlohmann::json e = {{"name", finish ? std::string("finish") : "micro-batch " + std::to_string(s.micro_batch)},
                          {"cat", "compute"}, {"ph", "X"}, {"pid", pid}, {"tid", 0},
                          {"ts", s.start_us - origin}, {"dur", s.end_us - s.start_us}};
      if (!finish) e["args"] = {{"micro_batch", s.micro_batch}, {"rows", s.rows}};
      events.push_back(std::move(e));
    }
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace cnet::inference
