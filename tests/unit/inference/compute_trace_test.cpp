// ComputeClock times each micro-batch a rank computes; chrome_trace lays them out one process per rank.
#include "cnet/inference/compute_trace.hpp"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

using namespace cnet::inference;

TEST(ComputeClock, RecordsOneSpanPerCallAndSumsThem) {
  ComputeClock clock;
  clock.time(7, 16, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  clock.time(8, 4, [] {});
  ASSERT_EQ(clock.spans().size(), 2u);
  EXPECT_EQ(clock.spans()[0].micro_batch, 7u);
  EXPECT_EQ(clock.spans()[0].rows, 16u);
  EXPECT_GE(clock.spans()[0].end_us - clock.spans()[0].start_us, 20000);
  EXPECT_LE(clock.spans()[0].end_us, clock.spans()[1].start_us);  // in call order
  EXPECT_GE(clock.seconds(), 0.020);
}

TEST(ComputeClock, RecordsNoSpanForACallThatThrows) {
  ComputeClock clock;
  EXPECT_THROW(clock.time(1, 1, [] { throw std::runtime_error("stage failed"); }), std::runtime_error);
  EXPECT_TRUE(clock.spans().empty());  // a failed micro-batch was not computed
}

TEST(ChromeTrace, OneProcessPerRankAndOneCompleteEventPerSpanFromTheEarliestStart) {
  std::vector<RankTrace> ranks = {{"stage 0/2 (rank 0 on a)", {{0, 16, 1'000'500, 1'001'000}, {1, 16, 1'001'000, 1'001'400}}},
                                  {"stage 1/2 (rank 1 on b)", {{0, 16, 1'001'100, 1'001'900}, {ComputeSpan::kFinish, 0, 1'002'000, 1'002'010}}}};
  auto trace = nlohmann::json::parse(chrome_trace(ranks));
  std::map<int, std::string> names;
  std::vector<nlohmann::json> spans;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") names[e.at("pid")] = e.at("args").at("name");
    if (e.at("ph") == "X") spans.push_back(e);
  }
  EXPECT_EQ(names, (std::map<int, std::string>{{0, "stage 0/2 (rank 0 on a)"}, {1, "stage 1/2 (rank 1 on b)"}}));
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].at("ts"), 0);  // the earliest span starts the clock
  EXPECT_EQ(spans[0].at("dur"), 500);
  EXPECT_EQ(spans[0].at("name"), "micro-batch 0");
  EXPECT_EQ(spans[0].at("args").at("rows"), 16);
  EXPECT_EQ(spans[2].at("pid"), 1);
  EXPECT_EQ(spans[2].at("ts"), 600);
  EXPECT_EQ(spans[3].at("name"), "finish");
  EXPECT_FALSE(spans[3].contains("args"));
}

TEST(ChromeTrace, NoSpansIsAnEmptyButValidTrace) {
  auto trace = nlohmann::json::parse(chrome_trace({{"rank 0", {}}}));
  for (const auto& e : trace.at("traceEvents")) EXPECT_EQ(e.at("ph"), "M");
}
