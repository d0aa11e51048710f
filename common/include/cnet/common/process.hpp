#pragma once
// Work with a deadline: a command run without a shell, or a piece of this program's own work run in a
// forked child. Whatever hangs (a driver, a resolver, a stuck NFS mount) is killed when the deadline
// passes and reported as such, so a health check or a plugin never waits longer than it was given.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cnet::common {

struct ProcessResult {
  bool started = false;    // false: fork/exec failed (output says why)
  bool timed_out = false;  // killed at the deadline
  int exit_code = -1;      // 128+signal when killed by a signal
  std::string output;      // stdout (run_command) or what the work returned / threw (run_in_child)
  bool ok() const { return started && !timed_out && exit_code == 0; }
};

// Runs argv[0] (looked up in PATH) with `env` added to this environment, stdout collected up to
// `max_output` bytes, stderr discarded. The child gets its own process group, killed whole at the deadline.
ProcessResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                          const std::vector<std::pair<std::string, std::string>>& env = {}, std::size_t max_output = 16u << 20);

// Runs `work` in a forked child and hands back the string it returns (exit 0), or the message of what
// it threw (exit 2). For work that may hang in a library: the caller's process is never stuck in it.
ProcessResult run_in_child(const std::function<std::string()>& work, std::chrono::milliseconds deadline,
                           std::size_t max_output = 64u << 20);

// In a child just forked from `parent`: killed when the parent dies, so no work outlives whoever started
// it (a rank that would go on writing, a probe nobody waits for); exits at once if the parent is already
// gone. (The signal comes when the forking thread ends: fork from a thread that outlives the child.)
void die_with_parent(pid_t parent);

}  // namespace cnet::common
