#pragma once
// cnet-doctor --job: every node of a job step runs its checks, the results meet over PMIx, and rank 0
// prints one table: each node's verdict, the settings where it differs from most nodes, and a short
// UCX pair test against rank 0 (bandwidth, P99 latency), optionally against a saved baseline.
#include <string>

#include "cnet/doctor/checks.hpp"

struct JobModeOptions {
  std::string save_baseline, compare_baseline;
  double tolerance = 0.2;
  bool json = false;
};

int run_job_mode(const cnet::doctor::DoctorConfig& config, const cnet::doctor::GatherOptions& gather, const JobModeOptions& options);
