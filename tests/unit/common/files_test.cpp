#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../scratch_dir.hpp"
#include "cnet/common/files.hpp"

using namespace cnet::common;
namespace fs = std::filesystem;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FileError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Files, ReadWholeFilesWithinABound) {
  cnet::testing::ScratchDir d;
  std::string p = d.write("a.txt", "hello\n");
  EXPECT_EQ(read_file(p), "hello\n");
  EXPECT_EQ(read_file_if_exists(d.file("missing")), std::nullopt);
  EXPECT_NE(error_of([&] { read_file(d.file("missing")); }).find("does not exist"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file(p, 3); }).find("larger than 3 bytes"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file(d.path()); }).find("not a regular file"), std::string::npos);
  EXPECT_FALSE(read_file("/proc/self/status").empty()) << "procfs reports size 0 but has text";
}

TEST(Files, AFifoIsRefusedInsteadOfBlocking) {
  cnet::testing::ScratchDir d;
  ASSERT_EQ(mkfifo(d.file("fifo").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { read_file(d.file("fifo")); }).find("not a regular file"), std::string::npos);
}

TEST(Files, AtomicWriteReplacesWholeWithTheModeAsked) {
  cnet::testing::ScratchDir d;
  std::string p = d.file("out.json");
  write_file_atomically(p, "old", 0600);
  write_file_atomically(p, "new", 0644);
  EXPECT_EQ(read_file(p), "new");
  struct stat st {};
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(std::distance(fs::directory_iterator(d.path()), fs::directory_iterator{}), 1) << "no temporary left behind";
}

// A link planted at the target is replaced, and what it points to is never written.
TEST(Files, AtomicWriteNeverFollowsALinkAtTheTarget) {
  cnet::testing::ScratchDir d;
  std::string victim = d.write("victim", "precious");
  d.link("out.prom", victim);
  write_file_atomically(d.file("out.prom"), "metrics");
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(d.file("out.prom")));
  EXPECT_EQ(read_file(d.file("out.prom")), "metrics");
}

TEST(Files, AtomicWriteIntoAMissingFolderSaysSo) {
  cnet::testing::ScratchDir d;
  EXPECT_NE(error_of([&] { write_file_atomically(d.file("no/such/file"), "x"); }).find("cannot create a temporary file"), std::string::npos);
}

TEST(Files, RemoveTreeWalksWithoutFollowingLinks) {
  cnet::testing::ScratchDir d;
  d.write("outside/keep", "x");
  d.write("tree/a/b/file", "y");
  d.link("tree/a/to-outside", d.file("outside"));
  d.link("top-link", d.file("outside"));
  remove_tree(d.file("tree"), {geteuid()});
  EXPECT_FALSE(fs::exists(d.file("tree")));
  EXPECT_EQ(read_file(d.file("outside/keep")), "x");
  remove_tree(d.file("top-link"), {geteuid()});
  EXPECT_FALSE(fs::exists(fs::symlink_status(d.file("top-link"))));
  EXPECT_TRUE(fs::exists(d.file("outside/keep"))) << "a link at the top is removed as a link";
  remove_tree(d.file("never-was"), {geteuid()});  // nothing to do
  EXPECT_THROW(remove_tree(d.file("."), {geteuid()}), FileError);
}

// slurmstepd (root) removes a folder the job could fill beforehand: a tree 20000 folders deep cost one
// stack frame, descriptor and path copy per level (417 MB, SIGSEGV under a 1 MiB stack). It is walked
// without recursion now, and what lies deeper than kMaxRemoveDepth is left in place, named.
TEST(Files, RemoveTreeLeavesATreeDeeperThanItsBoundInPlace) {
  cnet::testing::ScratchDir d;
  auto build = [&](const std::string& top, std::size_t depth) {
    ASSERT_EQ(mkdir(d.file(top).c_str(), 0700), 0);
    int fd = open(d.file(top).c_str(), O_RDONLY | O_DIRECTORY);
    for (std::size_t i = 0; i < depth && fd >= 0; ++i) {
      ASSERT_EQ(mkdirat(fd, "d", 0700), 0);
      int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
      close(fd);
      fd = next;
    }
    ASSERT_GE(fd, 0);
    close(fd);
  };
  build("shallow", kMaxRemoveDepth - 2);
  remove_tree(d.file("shallow"), {geteuid()});
  EXPECT_FALSE(fs::exists(d.file("shallow")));

  build("deep", 20000);
  std::string error = error_of([&] { remove_tree(d.file("deep"), {geteuid()}); });
  EXPECT_NE(error.find("folders deep: left in place"), std::string::npos) << error;
  EXPECT_TRUE(fs::exists(d.file("deep"))) << "the part it could not reach keeps its parents";
  // Gone for the scratch folder's own clean-up, one level at a time (deep/d/d becomes deep/d).
  std::string top = d.file("deep");
  while (rename((top + "/d/d").c_str(), (top + "/next").c_str()) == 0) {
    ASSERT_EQ(rmdir((top + "/d").c_str()), 0);
    ASSERT_EQ(rename((top + "/next").c_str(), (top + "/d").c_str()), 0);
  }
}

// Root's clean-up of a user's folder: the file and the empty folder go; a folder that is a link, or that
// holds more than the file, or belongs to another user, keeps what is in it.
TEST(Files, RemoveFileAndFolderOnlyWhereTheFolderIsTheOwners) {
  cnet::testing::ScratchDir d;
  d.write("step/nccl-topo.xml", "x");
  remove_file_and_folder(d.file("step"), "nccl-topo.xml", geteuid());
  EXPECT_FALSE(fs::exists(d.file("step")));

  d.write("elsewhere/nccl-topo.xml", "y");
  fs::create_directory_symlink(d.file("elsewhere"), d.file("swapped"));
  remove_file_and_folder(d.file("swapped"), "nccl-topo.xml", geteuid());
  EXPECT_TRUE(fs::exists(d.file("elsewhere/nccl-topo.xml"))) << "a folder swapped for a link leads nowhere";
  EXPECT_TRUE(fs::is_symlink(d.file("swapped")));

  d.write("busy/nccl-topo.xml", "z");
  d.write("busy/notes", "kept");
  remove_file_and_folder(d.file("busy"), "nccl-topo.xml", geteuid());
  EXPECT_FALSE(fs::exists(d.file("busy/nccl-topo.xml")));
  EXPECT_TRUE(fs::exists(d.file("busy/notes"))) << "a folder with more in it stays";

  d.write("theirs/nccl-topo.xml", "w");
  remove_file_and_folder(d.file("theirs"), "nccl-topo.xml", geteuid() + 1);
  EXPECT_TRUE(fs::exists(d.file("theirs/nccl-topo.xml"))) << "another owner's folder is left alone";
  remove_file_and_folder(d.file("theirs"), "../busy/notes", geteuid());
  EXPECT_TRUE(fs::exists(d.file("busy/notes"))) << "the file is a name in the folder, not a path";
}

TEST(Files, RemoveFileAndFolderLeavesATreeInPlace) {
  cnet::testing::ScratchDir d;
  d.write("a/nccl-topo.xml/inner", "x");  // the name is a folder now: unlink refuses it, and the folder stays
  remove_file_and_folder(d.file("a"), "nccl-topo.xml", geteuid());
  EXPECT_TRUE(fs::exists(d.file("a/nccl-topo.xml/inner")));
}

TEST(Files, RemoveTreeLeavesOtherOwnersAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give files another owner";
  cnet::testing::ScratchDir d;
  d.write("tree/mine", "x");
  d.write("tree/theirs/file", "y");
  ASSERT_EQ(chown(d.file("tree/theirs").c_str(), 4242, 4242), 0);
  EXPECT_NE(error_of([&] { remove_tree(d.file("tree"), {0}); }).find("tree/theirs belongs to uid 4242"), std::string::npos);
  EXPECT_TRUE(fs::exists(d.file("tree/theirs/file")));
  remove_tree(d.file("tree"), {0, 4242});
  EXPECT_FALSE(fs::exists(d.file("tree")));
}
