#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "../scratch_dir.hpp"
#include "cnet/scheduling/stale_step_state.hpp"

using namespace cnet::scheduling;
namespace fs = std::filesystem;

namespace {
// A bound UNIX socket at `path`; listening or not (a dead server's socket refuses connections).
int bound_socket(const fs::path& path, bool listening) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
  if (listening) listen(fd, 1);
  return fd;
}

struct StaleStepState : ::testing::Test {
  cnet::testing::ScratchDir scratch;
  fs::path root = scratch.path();
  PmixStepPaths paths;
  void SetUp() override {
    fs::create_directories(root / "spool/cn2");
    fs::create_directories(root / "tmp");
    paths = pmix_step_paths((root / "spool/%n").string(), (root / "tmp").string(), "cn2", 1000, 42, 0);
    fs::create_directories(paths.server_dir / "sub");
    std::ofstream(paths.server_dir / "sub/file") << "x";
    fs::create_directories(paths.client_dir);
  }
};
}  // namespace

TEST_F(StaleStepState, PathsFollowMpiPmix) {
  EXPECT_EQ(paths.server_socket, root / "spool/cn2/stepd.slurm.pmix.42.0");
  EXPECT_EQ(paths.server_dir, root / "spool/cn2/pmix.42.0");
  EXPECT_EQ(paths.client_dir, root / "tmp/spmix_appdir_1000_42.0");
  EXPECT_EQ(pmix_step_paths("/s", "", "cn1", 0, 7, 3).client_dir, "/tmp/spmix_appdir_0_7.3") << "TmpFS defaults to /tmp";
}

TEST_F(StaleStepState, DeadServersLeftoversAreRemoved) {
  int fd = bound_socket(paths.server_socket, false);
  auto removed = remove_stale_pmix_state(paths);
  close(fd);
  EXPECT_EQ(removed.size(), 3u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(paths.server_socket)));
  EXPECT_FALSE(fs::exists(paths.server_dir));
  EXPECT_FALSE(fs::exists(paths.client_dir));
  // Another step's state is not touched.
  EXPECT_TRUE(fs::exists(root / "spool/cn2"));
}

TEST_F(StaleStepState, LiveServerIsLeftAlone) {
  int fd = bound_socket(paths.server_socket, true);
  EXPECT_TRUE(remove_stale_pmix_state(paths).empty());
  close(fd);
  EXPECT_TRUE(fs::exists(fs::symlink_status(paths.server_socket)));
  EXPECT_TRUE(fs::exists(paths.server_dir / "sub/file"));
}

TEST_F(StaleStepState, NothingThereIsNothingToDo) {
  fs::remove_all(paths.server_dir);
  fs::remove_all(paths.client_dir);
  EXPECT_TRUE(remove_stale_pmix_state(paths).empty());
}
