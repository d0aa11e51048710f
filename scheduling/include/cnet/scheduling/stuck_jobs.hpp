#pragma once
// Resources Slurm has not given back: a job stuck COMPLETING (a task that will not die, an epilog that
// hangs, a GPU that does not let go) keeps its node out of use, and a job running long past its end
// still holds its GPUs. cnet-pool shows them per node and cnet-doctor --health-check flags them on the
// node that holds them; the rule is here once, over plain job records, so it is tested without Slurm.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cnet::scheduling {

struct HeldJob {
  std::string job_id, user;
  bool completing = false;         // JOB_COMPLETING (squeue CG); else running
  std::int64_t end_time = 0;       // unix seconds: when it ended (completing) or must end (running); 0 unknown/unlimited
  std::vector<std::string> nodes;  // the nodes it holds
};

struct StuckJob {
  std::string job_id, user;
  bool completing = false;
  std::int64_t seconds = 0;  // how long past its end

  // "job 42 (alice) completing for 12 min", "job 43 (bob) running 2 h 5 min past its end"
  std::string describe() const;
};

// Per node, the jobs holding it more than `threshold_s` past their end, oldest first.
std::map<std::string, std::vector<StuckJob>> stuck_jobs(const std::vector<HeldJob>& jobs, std::int64_t now, std::int64_t threshold_s);

// `squeue -h -o '%i|%T|%e|%u|%N'` with SLURM_TIME_FORMAT=%s: one job per line (job id, state, end time,
// user, node list); lines that do not parse are skipped, as are states other than RUNNING/COMPLETING.
std::vector<HeldJob> parse_squeue_jobs(const std::string& text);

std::string format_duration(std::int64_t seconds);  // "45 s", "12 min", "2 h 5 min", "3 d 4 h"

}  // namespace cnet::scheduling
