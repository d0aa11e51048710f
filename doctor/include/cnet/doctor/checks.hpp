#pragma once
// cnet-doctor's checks: each turns facts into pass/warn/fail with the value seen and the fix. Only a
// fault of this node that a job on it would hit fails (and drains under --health-check); a condition
// many nodes share at once warns. A site tunes them in doctor.conf (KEY = VALUE lines,
// contrib/slurm/doctor.conf lists every key with its default):
//   severities  clock clock.unsync swap sysctl memlock limits nics mtu gres discovery dns firewall plugins munge
//               nic.tuning stuck stuck.overtime = fail|warn|off
//   thresholds  clock.max_offset_ms net.core.rmem_max net.core.wmem_max fs.file-max nofile rings.min_percent
//               irqs.min_mbps stuck.after_s (0: off)
//   exclusions  nics.exclude = mlx5_1,eth0   dns.exclude = cloud[1-64]   gres.exclude = /dev/nvidia7
//   fabric      mtu.nics = ib0,eth2 (the NICs jobs use, whose MTUs must agree; default the RDMA NICs)
//   deadlines   deadline.discovery deadline.dns deadline.firewall deadline.scontrol deadline.munge
//               deadline.nics (seconds);
//               deadline.scontrol also bounds squeue

#include <chrono>
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
  std::map<std::string, std::vector<std::string>> lists;  // *.exclude, mtu.nics
  std::map<std::string, std::uint64_t> numbers;  // thresholds and deadlines, parsed once when read
  // Run as HealthCheckProgram (--health-check, not a doctor.conf key): conditions usually alike on
  // every node (firewall policy by source, MTUs of a NIC kind, plugins, memlock, the munge key's mode)
  // warn instead of failing, since a fail drains.
  bool health_check = false;
  static DoctorConfig defaults();
  // Reads KEY = VALUE lines over the defaults; throws std::runtime_error naming file:line and the key.
  static DoctorConfig load(const std::string& path);
  static DoctorConfig parse(const std::string& text, const std::string& source);
  std::string get(const std::string& key) const;
  const std::vector<std::string>& list(const std::string& key) const;
  std::uint64_t number(const std::string& key) const;  // a threshold or deadline (kNumbers' keys)
  std::chrono::seconds deadline(const std::string& what) const;  // "discovery", "dns", "firewall", "scontrol", "munge"
};

std::vector<CheckResult> run_checks(const NodeFacts& facts, const DoctorConfig& config);
Status worst(const std::vector<CheckResult>& results);

std::string results_json(const std::string& hostname, const std::vector<CheckResult>& results);
std::string results_table(const std::vector<CheckResult>& results);
// cnet_doctor_check_status{node,check} (0 pass, 1 warn, 2 fail; skipped checks left out),
// cnet_doctor_failed_checks{node} and cnet_doctor_last_run_timestamp_seconds{node} (unix time `now`).
std::vector<common::MetricFamily> results_metrics(const std::string& hostname, const std::vector<CheckResult>& results, double now);

// A node's line from `scontrol show node -o`: drained (a DRAIN flag in State=, not the word anywhere)
// and the drain reason without its "[user@time]" stamp.
struct NodeState {
  bool known = false, drained = false;
  std::string reason;
};
NodeState node_state(const std::string& scontrol_line);

// HealthCheckProgram: what to do about this node given the results and its current Slurm state.
struct HealthAction {
  enum Kind { nothing, drain, resume } kind = nothing;
  std::string reason;  // drain reason, always starting "cnet-doctor:" so a later run knows it set it
};
constexpr const char* kDrainPrefix = "cnet-doctor:";
HealthAction health_action(const std::vector<CheckResult>& results, bool drained, const std::string& current_reason);

}  // namespace cnet::doctor
