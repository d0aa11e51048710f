#include "cnet/scheduling/stuck_jobs.hpp"

#include <gtest/gtest.h>

using namespace cnet::scheduling;

TEST(StuckJobs, SqueueLinesWithEpochTimes) {
  auto jobs = parse_squeue_jobs(
      "42|COMPLETING|1796330000|alice|cn[1-2]\n"
      "43|RUNNING|1796331000|bob|cn3\n"
      "44|RUNNING|N/A|carol|cn4\n"        // no time limit
      "45|PENDING|1796331000|dave|\n"     // holds nothing
      "garbage line\n"
      "46|RUNNING|1796331000|eve|cn[5-\n"  // a node list that does not parse
      "47|COMPLETING|2026-12-03T21:00:00|frank|cn6\n");  // not epoch: SLURM_TIME_FORMAT not honoured
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[0].job_id, "42");
  EXPECT_TRUE(jobs[0].completing);
  EXPECT_EQ(jobs[0].end_time, 1796330000);
  EXPECT_EQ(jobs[0].nodes, (std::vector<std::string>{"cn1", "cn2"}));
  EXPECT_FALSE(jobs[1].completing);
  EXPECT_EQ(jobs[2].end_time, 0);
  EXPECT_EQ(jobs[3].end_time, 0);
}

TEST(StuckJobs, OnlyPastTheirEndByMoreThanTheThreshold) {
  std::int64_t now = 1796332000;
  std::vector<HeldJob> jobs = {
      {"42", "alice", true, now - 720, {"cn1", "cn2"}},  // completing 12 min
      {"43", "bob", false, now - 7500, {"cn2"}},         // 2 h 5 min past its time limit
      {"44", "carol", true, now - 30, {"cn3"}},          // completing for 30 s: normal
      {"45", "dave", false, now + 3600, {"cn4"}},        // running, an hour left
      {"46", "eve", false, 0, {"cn5"}},                  // no limit
  };
  auto stuck = stuck_jobs(jobs, now, 300);
  ASSERT_EQ(stuck.size(), 2u);
  ASSERT_EQ(stuck["cn1"].size(), 1u);
  EXPECT_EQ(stuck["cn1"][0].describe(), "job 42 (alice) completing for 12 min");
  ASSERT_EQ(stuck["cn2"].size(), 2u);
  EXPECT_EQ(stuck["cn2"][0].describe(), "job 43 (bob) running 2 h 5 min past its end") << "oldest first";
  EXPECT_EQ(stuck_jobs(jobs, now, 0).count("cn3"), 1u);
  EXPECT_EQ(format_duration(45), "45 s");
  EXPECT_EQ(format_duration(3 * 86400 + 4 * 3600 + 5), "3 d 4 h");
}
