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
    paths = pmix_step_paths((root / "spool/%n").string(), (root / "tmp").string(), "cn2", "host2", 1000, 42, 0);
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
  EXPECT_EQ(pmix_step_paths("/s", "", "cn1", "h1", 0, 7, 3).client_dir, "/tmp/spmix_appdir_0_7.3") << "TmpFS defaults to /tmp";
  // %n never climbs out of the spool folder, whatever name arrives: a name is one path component.
  for (const char* bad : {"..", "../etc", "a/b", "", ".hidden"})
    EXPECT_EQ(pmix_step_paths("/s/%n", "", bad, "h1", 0, 7, 3).server_dir, "/s/h1/pmix.7.3") << bad;
  EXPECT_EQ(pmix_step_paths("/var/%n/%h", "", "cn1", "h1", 0, 7, 3).server_dir, "/var/cn1/h1/pmix.7.3") << "%n is the NodeName, %h the host";
}

TEST_F(StaleStepState, DeadServersLeftoversAreRemoved) {
  int fd = bound_socket(paths.server_socket, false);
  auto removed = remove_stale_pmix_state(paths, 1000);
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
  EXPECT_TRUE(remove_stale_pmix_state(paths, 1000).empty());
  close(fd);
  EXPECT_TRUE(fs::exists(fs::symlink_status(paths.server_socket)));
  EXPECT_TRUE(fs::exists(paths.server_dir / "sub/file"));
}

TEST_F(StaleStepState, NothingThereIsNothingToDo) {
  fs::remove_all(paths.server_dir);
  fs::remove_all(paths.client_dir);
  EXPECT_TRUE(remove_stale_pmix_state(paths, 1000).empty());
}

// The client folder's name is one any local user can create first: a folder planted by another user
// is refused, and a link inside is removed as a link, not followed, so root never deletes outside it.
TEST_F(StaleStepState, PlantedFoldersAndLinksAreNotFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the folder another owner";
  fs::create_directories(root / "elsewhere");
  std::ofstream(root / "elsewhere/precious") << "x";
  fs::create_symlink(root / "elsewhere", paths.client_dir / "link");
  int fd = bound_socket(paths.server_socket, false);
  EXPECT_EQ(remove_stale_pmix_state(paths, 1000).size(), 3u);
  close(fd);
  EXPECT_TRUE(fs::exists(root / "elsewhere/precious")) << "followed a link out of the step's folder";

  fs::create_directories(paths.client_dir / "sub");
  ASSERT_EQ(chown(paths.client_dir.c_str(), 4242, 4242), 0);  // another local user made it first
  try {
    remove_stale_pmix_state(paths, 1000);
    FAIL() << "removed a folder another user owns";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to uid 4242"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(paths.client_dir / "sub"));
}
