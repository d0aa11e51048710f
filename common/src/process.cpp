#include "cnet/common/process.hpp"

#include "cnet/common/slurm_commands.hpp"
#include "cnet/common/text.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

// Declared by the sanitizer runtimes, absent (null) without them.
extern "C" void __sanitizer_set_death_callback(void (*)()) __attribute__((weak));

namespace cnet::common {
namespace {

using Clock = std::chrono::steady_clock;

// How long a child killed with SIGKILL may take to be reaped before the caller stops waiting for it.
constexpr auto kKillGrace = std::chrono::milliseconds(500);

// Reaps `pid` if it ends by `deadline`, polling: waitpid never blocks the caller past the deadline.
bool reaped_by(pid_t pid, Clock::time_point deadline, int& status) {
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // not our child any more (reaped elsewhere): nothing to wait for
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
  }
}

// Reads the child's pipe until it closes or the deadline passes; then reaps the child, killing its
// process group first when it is late.
ProcessResult collect(pid_t pid, int fd, Clock::time_point deadline, std::size_t max_output) {
  ProcessResult r;
  r.started = true;
  char buf[65536];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (r.output.size() < max_output) r.output.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), max_output - r.output.size()));
  }
  close(fd);
  int status = 0;
  if (!r.timed_out && !reaped_by(pid, deadline, status)) r.timed_out = true;  // closed its output, went on
  if (r.timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    if (!reaped_by(pid, Clock::now() + kKillGrace, status)) {
      // Unkillable for now (state D: a hung driver or mount). The caller goes on; a thread of its own
      // reaps the child whenever the kernel lets it go, so no zombie is left behind.
      std::thread([pid] {
        int ignored = 0;
        while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
        }
      }).detach();
      r.exit_code = -1;
      return r;
    }
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

ProcessResult not_started(const std::string& why) {
  ProcessResult r;
  r.output = why + ": " + std::strerror(errno);
  return r;
}

// Forks a child in its own process group whose stdout is a pipe back to us; the child runs `child`
// (which must not return) and we collect its output until the deadline.
ProcessResult fork_and_collect(std::chrono::milliseconds deadline, std::size_t max_output,
                               const std::function<void(int write_fd)>& child) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return not_started("pipe");
  auto until = Clock::now() + deadline;
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return not_started("fork");
  }
  if (pid == 0) {
    setpgid(0, 0);
    die_with_parent(parent);
    // A death callback belongs to the parent (libFuzzer's records the current input as a crash): a
    // child that dies is an outcome the parent reports, not the parent crashing.
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
    close(fds[0]);
    child(fds[1]);
    _exit(127);
  }
  close(fds[1]);
  return collect(pid, fds[0], until, max_output);
}

}  // namespace

void die_with_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // it died before the line above
}

ProcessResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                          const std::vector<std::pair<std::string, std::string>>& env, std::size_t max_output) {
  if (argv.empty()) return not_started("no command");
  return fork_and_collect(deadline, max_output, [&](int out) {
    dup2(out, STDOUT_FILENO);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, STDIN_FILENO), dup2(null, STDERR_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
  });
}

std::string slurm_command(const std::string& name) {
  for (const auto& dir : split(kSlurmCommandDirs, ':')) {
    std::string path = dir + "/" + name;
    if (!dir.empty() && access(path.c_str(), X_OK) == 0) return path;
  }
  return name;
}

ProcessResult run_in_child(const std::function<std::string()>& work, std::chrono::milliseconds deadline, std::size_t max_output) {
  return fork_and_collect(deadline, max_output, [&](int out_fd) {
    int code = 0;
    std::string out;
    try {
      out = work();
    } catch (const std::exception& e) {
      out = e.what();
      code = 2;
    } catch (...) {
      out = "unknown error";
      code = 2;
    }
    for (std::size_t done = 0; done < out.size();) {
      ssize_t n = write(out_fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    _exit(code);  // no destructors or atexit handlers of the parent's state in the child
  });
}

}  // namespace cnet::common
