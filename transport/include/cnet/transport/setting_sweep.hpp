#pragma once
// One transport setting measured at several values (`cnet-perf p2p --sweep UCX_RC_TX_QUEUE_LEN=256,1024`):
// the argument's grammar, a check that UCX takes every value before anything is measured, the value
// applied while a channel is made, and the result table with the best value by P99 marked (tails, not
// means, are what a queue depth trades against bandwidth).

#include <cstddef>
#include <string>
#include <vector>

#include "cnet/transport/perf_report.hpp"

namespace cnet::transport {

struct SettingSweep {
  std::string variable;             // UCX_RC_TX_QUEUE_LEN
  std::vector<std::string> values;  // in the order given
};

// "VAR=v1,v2,...": a UCX_ variable (what cnet's channel reads), 1 to 16 distinct non-empty values.
// Throws std::invalid_argument naming what is wrong and how to write it.
SettingSweep parse_setting_sweep(const std::string& argument);

// Sets the variable for this process while it lives (UCX reads its settings when a channel is made),
// and puts back what was there before.
class ScopedSetting {
 public:
  ScopedSetting(const std::string& variable, const std::string& value);
  ~ScopedSetting();
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  std::string variable_;
  bool had_ = false;
  std::string before_;
};

// "" when UCX accepts `variable=value` for a context and worker on this host, else why not. Cheap and
// local: run for every value on every rank before measuring, so a typo stops all ranks alike at once.
std::string ucx_refusal(const std::string& variable, const std::string& value);

struct SweepPoint {
  std::string value;
  PerfReport report;
};

// Per message size, the index into `points` with the lowest P99 latency (ties: the higher bandwidth).
std::vector<std::size_t> best_by_p99(const std::vector<SweepPoint>& points);

std::string sweep_table(const std::string& variable, const std::vector<SweepPoint>& points);  // rows, best marked
std::string sweep_json(const std::string& variable, const std::vector<SweepPoint>& points);   // cnet.perf.sweep/v1

}  // namespace cnet::transport
