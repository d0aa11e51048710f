#include <gtest/gtest.h>

#include <fstream>

#include "cnet/launcher/progress_log.hpp"
#include "test_files.hpp"

using namespace cnet::launcher;
using Progress = cnet::launcher::test::ScratchDir;

TEST_F(Progress, RecordsSurviveAndResume) {
  std::string p = path("out.progress");
  {
    auto log = ProgressLog::start(p, "job-a");
    log.record(0);
    log.record(3);
    log.sync();
  }
  auto log = ProgressLog::resume(p, "job-a");
  EXPECT_EQ(log.done(), (std::set<std::uint32_t>{0, 3}));
  log.record(1);
  EXPECT_EQ(ProgressLog::resume(p, "job-a").done().size(), 3u);
}

TEST_F(Progress, TornLastLineIsNotCounted) {
  std::string p = path("out.progress");
  { ProgressLog::start(p, "job").record(5); }
  std::ofstream(p, std::ios::app) << "done 1";  // a crash in the middle of an append
  {
    auto log = ProgressLog::resume(p, "job");
    EXPECT_EQ(log.done(), (std::set<std::uint32_t>{5}));
    log.record(2);
  }
  EXPECT_EQ(ProgressLog::resume(p, "job").done(), (std::set<std::uint32_t>{2, 5}));
}

TEST_F(Progress, RefusesAnotherJobOrNoLog) {
  std::string p = path("out.progress");
  { ProgressLog::start(p, "job-a"); }
  EXPECT_THROW(ProgressLog::resume(p, "job-b"), std::runtime_error);
  EXPECT_THROW(ProgressLog::resume(path("none"), "job-a"), std::runtime_error);
  std::ofstream(p) << "garbage\n";
  EXPECT_THROW(ProgressLog::resume(p, "job-a"), std::runtime_error);
}

TEST_F(Progress, FileIdentityFollowsContent) {
  std::ofstream(path("a")) << "same";
  std::ofstream(path("b")) << "same";
  std::ofstream(path("c")) << "other";
  EXPECT_EQ(file_identity(path("a")), file_identity(path("b")));
  EXPECT_NE(file_identity(path("a")), file_identity(path("c")));
}
