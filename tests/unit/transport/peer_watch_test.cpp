#include "cnet/transport/peer_watch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cnet/common/text.hpp"

using cnet::transport::PeerWatch;
using cnet::transport::process_identity;

namespace {
// A child that publishes its identity through a pipe and then waits to be killed.
struct Child {
  pid_t pid = -1;
  std::string identity;
  Child() {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      std::string id = process_identity();
      if (write(fds[1], id.data(), id.size()) < 0) _exit(1);
      close(fds[1]);
      pause();
      _exit(0);
    }
    close(fds[1]);
    char buf[256];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) identity.assign(buf, static_cast<std::size_t>(n));
    close(fds[0]);
  }
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

bool exits_within(const PeerWatch& w, std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!w.exited())
    if (std::chrono::steady_clock::now() > end) return false;
    else std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return true;
}
}  // namespace

TEST(PeerWatch, IdentityIsBootPidAndStartTime) {
  auto parts = cnet::common::split(process_identity(), ' ');
  ASSERT_EQ(parts.size(), 3u) << process_identity();
  EXPECT_EQ(parts[0].size(), 36u) << "the kernel's boot id, a UUID";
  EXPECT_EQ(parts[1], std::to_string(getpid()));
  EXPECT_FALSE(parts[2].empty());
}

// A killed process is seen as exited; it does not need to be reaped first (a zombie counts).
TEST(PeerWatch, SeesASameNodeProcessExit) {
  Child child;
  ASSERT_GT(child.pid, 0);
  auto watch = PeerWatch::open(child.identity);
  ASSERT_TRUE(watch) << child.identity;
  EXPECT_FALSE(watch->exited());
  kill(child.pid, SIGKILL);
  EXPECT_TRUE(exits_within(*watch, std::chrono::seconds(5)));
}

// Only the very process published is watched: another node's (boot id), a reused pid (start time),
// one gone already, or garbage gives no watch, so the caller keeps UCX's own failure handling.
TEST(PeerWatch, RefusesWhatIsNotThatProcessHere) {
  auto parts = cnet::common::split(process_identity(), ' ');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(PeerWatch::open(process_identity()));
  EXPECT_FALSE(PeerWatch::open("00000000-0000-0000-0000-000000000000 " + parts[1] + " " + parts[2]));
  EXPECT_FALSE(PeerWatch::open(parts[0] + " " + parts[1] + " 1" + parts[2]));
  EXPECT_FALSE(PeerWatch::open(parts[0] + " 0 " + parts[2]));
  EXPECT_FALSE(PeerWatch::open(parts[0] + " 4194305000 " + parts[2]));
  EXPECT_FALSE(PeerWatch::open(""));
  EXPECT_FALSE(PeerWatch::open(parts[0] + " " + parts[1]));
  std::string gone;
  {
    Child child;
    gone = child.identity;
  }
  EXPECT_FALSE(PeerWatch::open(gone));
}
