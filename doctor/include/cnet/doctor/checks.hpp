#pragma once
// cnet-doctor's checks: each turns facts into pass/warn/fail with the value seen and the fix. Which
// checks run and their thresholds come from a config file (KEY = VALUE lines), so a site tunes them
// without a rebuild:
//   clock.max_offset_ms = 1000      swap = warn|fail|off        net.core.rmem_max = 4194304
//   net.core.wmem_max = 4194304     fs.file-max = 1000000       memlock = fail|warn|off
//   nofile = 65536                  nics = fail|warn|off        dns = fail|warn|off
//   gres = fail|warn|off            firewall = fail|warn|off    clock = fail|warn|off

#include <map>
#include <string>
#include <vector>

#include "cnet/doctor/node_facts.hpp"
#include "cnet/common/prometheus.hpp"

namespace cnet::doctor {

enum class Status { pass, warn, fail, skip };
const char* to_string(Status s);

struct CheckResult {
  std::string check;   // "clock", "swap", "net.core.rmem_max", "nic mlx5_0", ...
  Status status = Status::pass;
  std::string seen;    // the value found
  std::string fix;     // what to do when it is not a pass
};

struct DoctorConfig {
  std::map<std::string, std::string> values;  // defaults, overridden by the file
  static DoctorConfig defaults();
  // Reads KEY = VALUE lines over the defaults; throws std::runtime_error naming file:line and the key.
  static DoctorConfig load(const std::string& path);
  static DoctorConfig parse(const std::string& text, const std::string& source);
  std::string get(const std::string& key) const;
};

std::vector<CheckResult> run_checks(const NodeFacts& facts, const DoctorConfig& config);
Status worst(const std::vector<CheckResult>& results);

std::string results_json(const std::string& hostname, const std::vector<CheckResult>& results);
std::string results_table(const std::vector<CheckResult>& results);
// cnet_doctor_check_status{node,check} (0 pass, 1 warn, 2 fail; skipped checks left out),
// cnet_doctor_failed_checks{node} and cnet_doctor_last_run_timestamp_seconds{node} (unix time `now`).
std::vector<common::MetricFamily> results_metrics(const std::string& hostname, const std::vector<CheckResult>& results, double now);

// HealthCheckProgram: what to do about this node given the results and its current Slurm state.
struct HealthAction {
  enum Kind { nothing, drain, resume } kind = nothing;
  std::string reason;  // drain reason, always starting "cnet-doctor:" so a later run knows it set it
};
constexpr const char* kDrainPrefix = "cnet-doctor:";
HealthAction health_action(const std::vector<CheckResult>& results, bool drained, const std::string& current_reason);

}  // namespace cnet::doctor
