#pragma once
// LocalLauncher: runs N copies of a command on this machine as one PMIx job, hosting the PMIx server
// itself, so `cnet-perf --local N` and `cnet-run --local N` use the same Bootstrap as under srun.

#include <chrono>
#include <string>
#include <vector>

namespace cnet::transport {

struct LocalLaunch {
  unsigned ranks = 2;
  std::vector<std::string> argv;  // program and arguments, run once per rank
  std::chrono::seconds timeout{std::chrono::hours(24)};  // the whole job; then every rank is killed
};

// The launch a tool's `--local N` asks for: this same program with the same arguments, minus --local.
LocalLaunch relaunch_locally(unsigned ranks, int argc, char** argv);

// Starts the ranks and waits for them. When one fails (non-zero exit, signal, PMIx_Abort) the others
// are stopped at once, so a dead rank never leaves the rest hanging. Returns 0 when all succeeded, else
// the first failure's exit code (128+signal for a signal); prints which rank failed to stderr.
int run_local(const LocalLaunch& launch);

}  // namespace cnet::transport
