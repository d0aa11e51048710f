#pragma once
// cnet-doctor --job: every node of a job step runs its checks, the results meet over PMIx, rank 0 runs
// the link test (transport/link_test.hpp, its quick form) against the first rank of every other node,
// and prints one table: each node's verdict, the settings where it differs from most nodes, and the
// pair test's bandwidth and P99 latency, optionally against a saved baseline (perf_report.hpp). With
// all_pairs every pair of nodes is tested: slow pairs and the nodes behind them are named, drawn as a
// heatmap, and the matrix is in --json. Each node's
// munge credential is decoded on rank 0's node: one that does not decode there has another munge key.

#include <map>
#include <string>
#include <vector>

#include "cnet/doctor/checks.hpp"
#include "cnet/transport/perf_report.hpp"

namespace cnet::doctor {

struct JobModeOptions {
  std::string save_baseline, compare_baseline;
  double tolerance = 0.2;
  bool json = false;
  bool all_pairs = false;  // every pair of nodes (transport/link_matrix.hpp), not only each against rank 0
  std::string heatmap;     // then: draw the matrix here (SVG)
};

// What the first rank of one node found there.
struct NodeReport {
  std::string host, status;
  std::vector<std::string> failing;              // "check: value seen"
  std::map<std::string, std::string> settings;   // snapshot, flattened: "/sysctl/net.core.rmem_max" -> "\"212992\""
  std::string munge_credential;                  // made there, decoded on rank 0's node ("" none)
  std::string nic_drivers;                       // its NICs' drivers and firmware, for the pair baselines
};
std::string to_json(const NodeReport& report);
NodeReport node_report_from_json(const std::string& text);  // throws std::runtime_error

struct JobRow {
  std::string host, status;
  bool rank0 = false;
  double gbytes = 0, p99_us = 0;  // the pair test to rank 0 (largest size's bandwidth, smallest size's P99)
  std::vector<std::string> problems;
};

// The table: failing checks, settings where a node departs from what most nodes have, and pair tests
// that regressed against `baseline` (when given) by more than `tolerance`, with the hosts whose NIC
// drivers changed since it was saved.
std::vector<JobRow> job_table(const std::vector<NodeReport>& nodes, const std::map<std::string, transport::PerfReport>& pairs,
                              const std::vector<transport::PerfReport>* baseline, double tolerance);
// Settings every node must share (the job network's MTU and link rate) that differ, naming each node's
// value: "cn1 9000, cn2 1500: MTU differs across the job". Reported whether or not a majority names
// the odd node (job_table does that), so two nodes that disagree are never called healthy.
std::vector<std::string> job_wide_problems(const std::vector<NodeReport>& nodes);
// Each pair report gets its two hosts' NIC drivers from their nodes' reports (what a baseline saves).
void add_nic_drivers(const std::vector<NodeReport>& nodes, std::map<std::string, transport::PerfReport>& pairs);
// Runs this rank's part under srun --mpi=pmix; rank 0 prints. Exit: 0 every node fine, 1 a node has problems.
int run_job_mode(const DoctorConfig& config, const GatherOptions& gather, const JobModeOptions& options);

}  // namespace cnet::doctor
