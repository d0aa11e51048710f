#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "cnet/common/process.hpp"
#include "cnet/common/slurm_commands.hpp"

using namespace cnet::common;
using namespace std::chrono_literals;

TEST(Process, CommandOutputAndExitCode) {
  auto r = run_command({"sh", "-c", "echo $CNET_X; exit 3"}, 10s, {{"CNET_X", "hello"}});
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "hello\n");
  EXPECT_EQ(run_command({"/nonexistent/tool"}, 10s).exit_code, 127);
}

// A hung command is killed at its deadline, with whatever it started in its process group.
TEST(Process, AHungCommandIsKilledAtTheDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_command({"sh", "-c", "sleep 30 & sleep 30"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// A child that closed its output and goes on (or one stuck in a driver) does not hold the caller past
// the deadline: reaping polls, and the child is killed when the deadline passes.
TEST(Process, AChildThatClosedItsOutputDoesNotOutliveTheDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_command({"sh", "-c", "exec >&-; sleep 20"}, 1s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  t0 = std::chrono::steady_clock::now();
  r = run_in_child([] {
    close(STDOUT_FILENO);
    for (int fd = 3; fd < 64; ++fd) close(fd);  // the pipe back to the parent among them
    sleep(20);
    return std::string();
  }, 1s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
}

TEST(Process, WorkInAChild) {
  auto r = run_in_child([] { return std::string("from pid ") + std::to_string(getpid()); }, 10s);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r.output, "from pid " + std::to_string(getpid())) << "ran in another process";
  r = run_in_child([]() -> std::string { throw std::runtime_error("driver said no"); }, 10s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "driver said no");
  r = run_in_child([] {
    sleep(30);
    return std::string("too late");
  }, 300ms);
  EXPECT_TRUE(r.timed_out);
}

// Slurm's commands come from the Slurm cnet was built against, whatever PATH says (a health check runs
// with none); a name that Slurm does not have is left to PATH.
TEST(SlurmCommand, FromTheSlurmBuiltAgainst) {
  std::string scontrol = slurm_command("scontrol");
  ASSERT_EQ(scontrol.front(), '/') << scontrol;
  EXPECT_NE(std::string(kSlurmCommandDirs).find(scontrol.substr(0, scontrol.rfind('/'))), std::string::npos) << scontrol;
  EXPECT_EQ(slurm_command("no-such-slurm-tool"), "no-such-slurm-tool");
}
