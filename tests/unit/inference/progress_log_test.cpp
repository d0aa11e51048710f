#include <gtest/gtest.h>

#include <fstream>

#include "cnet/inference/progress_log.hpp"
#include "test_files.hpp"

using namespace cnet::inference;
using Progress = cnet::inference::test::ScratchDir;

TEST_F(Progress, RecordsSurviveAndResume) {
  std::string p = path("out.progress");
  {
    auto log = ProgressLog::start(p, "job-a");
    log.record(0);
    log.record(3);
    log.sync();
  }
  {
    auto log = ProgressLog::resume(p, "job-a", 10);
    EXPECT_EQ(log.done(), (std::set<std::uint32_t>{0, 3}));
    log.record(1);
  }
  EXPECT_EQ(ProgressLog::resume(p, "job-a", 10).done().size(), 3u);
}

TEST_F(Progress, TornLastLineIsNotCounted) {
  std::string p = path("out.progress");
  { ProgressLog::start(p, "job").record(5); }
  std::ofstream(p, std::ios::app) << "done 1";  // a crash in the middle of an append
  {
    auto log = ProgressLog::resume(p, "job", 10);
    EXPECT_EQ(log.done(), (std::set<std::uint32_t>{5}));
    log.record(2);
  }
  EXPECT_EQ(ProgressLog::resume(p, "job", 10).done(), (std::set<std::uint32_t>{2, 5}));
}

TEST_F(Progress, RefusesAnotherJobOrNoLog) {
  std::string p = path("out.progress");
  { ProgressLog::start(p, "job-a"); }
  EXPECT_THROW(ProgressLog::resume(p, "job-b", 10), std::runtime_error);
  EXPECT_THROW(ProgressLog::resume(path("none"), "job-a", 10), std::runtime_error);
  std::ofstream(p) << "garbage\n";
  EXPECT_THROW(ProgressLog::resume(p, "job-a", 10), std::runtime_error);
}

// Records that cannot be this job's are refused, not trusted: negative, huge, or past its micro-batches.
TEST_F(Progress, RecordsOutsideTheJobAreRefused) {
  std::string p = path("out.progress");
  { ProgressLog::start(p, "job"); }
  for (const char* bad : {"done -1\n", "done 18446744073709551615\n", "done 10\n", "done 3x\n", "done  3\n"}) {
    { ProgressLog::start(p, "job"); }
    std::ofstream(p, std::ios::app) << bad;
    EXPECT_THROW(ProgressLog::resume(p, "job", 10), std::runtime_error) << bad;
  }
}

// Two runs writing one output would interleave their rows: the second is refused while the first holds the log.
TEST_F(Progress, OneRunPerOutput) {
  std::string p = path("out.progress");
  auto first = ProgressLog::start(p, "job");
  first.record(4);
  first.sync();
  try {
    ProgressLog::start(p, "job");
    FAIL() << "a second run started on a locked output";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another cnet-run is writing this output"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ProgressLog::resume(p, "job", 10), std::runtime_error);
  EXPECT_EQ(first.done(), (std::set<std::uint32_t>{4})) << "the refused run dropped nothing";
}

TEST_F(Progress, FileIdentityFollowsContent) {
  std::ofstream(path("a")) << "same";
  std::ofstream(path("b")) << "same";
  std::ofstream(path("c")) << "other";
  EXPECT_EQ(file_identity(path("a")), file_identity(path("b")));
  EXPECT_NE(file_identity(path("a")), file_identity(path("c")));
  // A change past the first 64 KiB at the same size is a different file (the head alone was hashed).
  std::string big(1 << 20, 'x');
  std::ofstream(path("d")) << big;
  big[900'000] = 'y';
  std::ofstream(path("e")) << big;
  EXPECT_NE(file_identity(path("d")), file_identity(path("e")));
}
