#include "cnet/transport/link_matrix.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace cnet::transport;

namespace {

// Four nodes, every pair at 12 GB/s and 5 us, except what a test changes.
LinkMatrix four_nodes() {
  LinkMatrix m;
  m.hosts = {"cn1", "cn2", "cn3", "cn4"};
  m.gbytes.assign(4, std::vector<double>(4, 12.0));
  m.p99_us.assign(4, std::vector<double>(4, 5.0));
  for (int i = 0; i < 4; ++i) m.gbytes[i][i] = m.p99_us[i][i] = 0;
  return m;
}

void set(std::vector<std::vector<double>>& grid, int i, int j, double v) { grid[i][j] = grid[j][i] = v; }

}  // namespace

TEST(LinkMatrix, AllPairsEvenIsClean) {
  auto f = find_slow_pairs(four_nodes(), 0.2);
  EXPECT_TRUE(f.slow_pairs.empty());
  EXPECT_TRUE(f.suspect_nodes.empty());
}

// One node's NIC is slow: every pair with it is slow, and it is the node behind them.
TEST(LinkMatrix, TheNodeBehindTheSlowPairsIsNamed) {
  auto m = four_nodes();
  for (int j : {0, 1, 2}) set(m.gbytes, 3, j, 3.0);
  auto f = find_slow_pairs(m, 0.2);
  ASSERT_EQ(f.slow_pairs.size(), 3u);
  ASSERT_EQ(f.suspect_nodes, std::vector<std::size_t>{3});
  EXPECT_NE(f.lines[0].find("slow pair cn1 - cn4: 3.00 GB/s vs 12.00 GB/s for the job's typical pair"), std::string::npos) << f.lines[0];
  EXPECT_NE(f.lines.back().find("node cn4 is in 3 of its 3 pairs' slow ones"), std::string::npos) << f.lines.back();

  // A single bad cable: one slow pair, neither node behind most of its pairs.
  m = four_nodes();
  set(m.gbytes, 0, 1, 3.0);
  f = find_slow_pairs(m, 0.2);
  EXPECT_EQ(f.slow_pairs.size(), 1u);
  EXPECT_TRUE(f.suspect_nodes.empty());

  // A latency outlier counts too.
  m = four_nodes();
  set(m.p99_us, 1, 2, 40);
  f = find_slow_pairs(m, 0.2);
  ASSERT_EQ(f.slow_pairs.size(), 1u);
  EXPECT_NE(f.lines[0].find("P99 40.0 us vs 5.0 us"), std::string::npos) << f.lines[0];
}

// Against a baseline every pair is judged by its own saved number: a job-wide drop is found too.
TEST(LinkMatrix, ABaselineJudgesEachPairByItsOwnNumber) {
  auto m = four_nodes();
  PerfReport saved;
  saved.mode = "p2p";
  saved.hosts = {"cn3", "cn2"};  // either order
  saved.rows = {PerfRow{1 << 20, 24.0, 24.0, 0, 0, 0, -1}};
  compare_with_baseline(m, {saved});
  EXPECT_EQ(m.baseline_gbytes[1][2], 24.0);
  EXPECT_EQ(m.baseline_gbytes[2][1], 24.0);
  auto f = find_slow_pairs(m, 0.2);
  ASSERT_EQ(f.slow_pairs.size(), 1u);
  EXPECT_EQ(f.slow_pairs[0], std::make_pair(std::size_t{1}, std::size_t{2}));
  EXPECT_NE(f.lines[0].find("12.00 GB/s vs 24.00 GB/s in the baseline"), std::string::npos) << f.lines[0];
  auto j = nlohmann::json::parse(to_json(m, f));
  EXPECT_EQ(j["slow_pairs"][0], nlohmann::json({"cn2", "cn3"}));
  EXPECT_EQ(j["gbytes"][1][2], 12.0);
  EXPECT_EQ(j["baseline_gbytes"][2][1], 24.0);
}

// The picture: a cell per pair in both maps, slow pairs outlined, the node behind them in red, the
// drop against the baseline written in the cell, host names made safe for XML.
TEST(LinkMatrix, HeatmapMarksSlowPairsAndSuspects) {
  auto m = four_nodes();
  m.hosts[0] = "cn<1>&";
  for (int j : {0, 1, 2}) set(m.gbytes, 3, j, 3.0);
  m.baseline_gbytes.assign(4, std::vector<double>(4, 0.0));
  set(m.baseline_gbytes, 0, 3, 12.0);
  auto f = find_slow_pairs(m, 0.2);
  std::string svg = heatmap_svg(m, f, "test");
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"pair"), 2u * 12);       // both maps, every ordered pair
  EXPECT_EQ(count("class=\"pair slow\""), 2u * 6);  // 3 slow pairs, both directions, both maps
  EXPECT_NE(svg.find("cn4 (suspect)"), std::string::npos);
  EXPECT_NE(svg.find("-75% vs base"), std::string::npos);
  EXPECT_NE(svg.find("cn&lt;1&gt;&amp;"), std::string::npos);
  EXPECT_EQ(svg.find("cn<1>"), std::string::npos);
}
