#include <gtest/gtest.h>
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
