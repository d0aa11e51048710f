#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>

#include "cnet/launcher/boundary_swing.hpp"
#include "cnet/launcher/swing_stage.hpp"
#include "test_files.hpp"

using namespace cnet::launcher;
using Swing = cnet::launcher::test::ScratchDir;

namespace {
// Two stages' seconds per row on their own layers and on the swing layer.
struct Speeds {
  double up_own, up_swing, down_own, down_swing;
};
// A run of micro-batches of `rows` rows through two stages, timed as a pipeline: the downstream stage
// begins each when it has finished the one before and the upstream has sent it, and its reports reach
// the upstream `lag` micro-batches late. Returns the cut after it.
BoundarySwing run(BoundarySwing cut, const std::vector<Speeds>& speeds, std::size_t rows, std::size_t lag) {
  std::deque<SwingReport> in_flight;
  const double r = static_cast<double>(rows);
  double up_done = 0, down_done = 0;  // when each stage finished its last micro-batch
  for (const Speeds& s : speeds) {
    const bool take = cut.take_next(rows);
    up_done += r * (s.up_own + (take ? s.up_swing : 0));
    cut.upstream_measured({s.up_own, take ? s.up_swing : -1}, rows);
    const double slack = down_done - up_done;  // > 0: the input waited for the downstream stage
    down_done = std::max(down_done, up_done) + r * (s.down_own + (take ? 0 : s.down_swing));
    in_flight.push_back({s.down_own, take ? -1 : s.down_swing, slack});
    if (in_flight.size() > lag) cut.downstream_measured(in_flight.front(), rows), in_flight.pop_front();
  }
  while (!in_flight.empty()) cut.downstream_measured(in_flight.front(), rows), in_flight.pop_front();
  return cut;
}
std::vector<Speeds> steady(Speeds s, std::size_t n) { return std::vector<Speeds>(n, s); }
}  // namespace

TEST(BoundarySwing, KeepsThePlannedSplitUntilTheDownstreamStageReports) {
  BoundarySwing cut;
  cut.upstream_measured({1.0, -1}, 10);
  EXPECT_FALSE(cut.take_next(10));
  EXPECT_FALSE(cut.take_next(10));
  EXPECT_EQ(cut.taken(), 0u);
  EXPECT_EQ(cut.decided(), 2u);
}

TEST(BoundarySwing, EvensOutStagesOfUnequalSpeed) {
  // The downstream stage is 10% slower on its own layers; the layer at the cut costs a fifth of them.
  // Evened out, the upstream computes it for (1.1 + 0.2 - 1.0) / 0.4 = 75% of the micro-batches, and
  // the two stages' time differs by a few layers' over the run (600 s of 2400 without it): the
  // downstream keeps a little lead of input, so that taking the layer never starves it.
  auto cut = run({}, steady({1.0, 0.2, 1.1, 0.2}, 200), 10, 2);
  EXPECT_NEAR(static_cast<double>(cut.taken()) / cut.decided(), 0.75, 0.03);
  EXPECT_LT(std::fabs(cut.upstream_seconds() - cut.downstream_seconds()), 3 * 10 * 0.2);
  EXPECT_NEAR(cut.upstream_seconds(), 200 * 10 * (1.0 + 0.75 * 0.2), 10);
}

TEST(BoundarySwing, EvenAlsoFromAShortRun) {
  // 32 micro-batches, 2 decided before the first report, the downstream 1% slower: the totals still
  // end within a layer's time.
  auto cut = run({}, steady({1.0, 0.06, 1.0 - 0.06 + 0.01, 0.06}, 32), 128, 2);
  EXPECT_LT(std::fabs(cut.upstream_seconds() - cut.downstream_seconds()), 128 * 0.06);
  EXPECT_GT(cut.taken(), 0u);
}

TEST(BoundarySwing, SlowerUpstreamLeavesTheLayerDownstream) {
  auto cut = run({}, steady({1.3, 0.2, 1.0, 0.2}, 50), 10, 2);
  EXPECT_EQ(cut.taken(), 0u);
}

TEST(BoundarySwing, TakesTheLayerOnlyWhileTheDownstreamStageHasInputWaiting) {
  // Behind in computing time, yet its input arrives just in time (in lockstep): taking the layer would
  // only make it wait that much longer for the micro-batch.
  BoundarySwing cut;
  cut.upstream_measured({1.0, 0.2}, 10);
  cut.downstream_measured({1.5, 0.2, 0.1}, 10);
  EXPECT_FALSE(cut.take_next(10));
  cut.downstream_measured({1.5, 0.2, 1.5}, 10);  // its input now waited longer than the layer takes here
  EXPECT_TRUE(cut.take_next(10));
}

TEST(BoundarySwing, UsesTheOtherSidesLayerCostScaledByItsSpeed) {
  // Only the downstream stage has computed the layer; the upstream, twice as fast on its own layers,
  // is taken to compute it in half the time.
  BoundarySwing cut;
  cut.upstream_measured({0.5, -1}, 1);
  cut.downstream_measured({1.0, 0.4, 1.0}, 1);  // for a micro-batch decided before: nothing pending
  // So far 0.5 against 1.4. Taking: 0.5 + 0.7 vs 1.4 + 1.0 (1.2 apart); leaving: 1.0 vs 2.8 (1.8 apart).
  EXPECT_TRUE(cut.take_next(1));
}

TEST(BoundarySwing, FollowsSpeedsThatChange) {
  auto speeds = steady({1.0, 0.2, 1.0, 0.2}, 40);
  auto busier = steady({1.0, 0.2, 1.2, 0.2}, 40);  // the downstream node got busier
  speeds.insert(speeds.end(), busier.begin(), busier.end());
  auto cut = run({}, speeds, 10, 2);
  EXPECT_GT(cut.taken(), 20u + 35u);  // about half, then all
}

TEST(BoundarySwing, AReportThatMeasuredNothingCountsForNothing) {
  BoundarySwing cut;
  cut.upstream_measured({std::nan(""), -1}, 10);
  cut.downstream_measured({-1, -1}, 10);
  EXPECT_EQ(cut.upstream_seconds(), 0);
  EXPECT_EQ(cut.downstream_seconds(), 0);
  EXPECT_FALSE(cut.take_next(10));
}

TEST_F(Swing, CutsThatMaySwing) {
  write_example_model(path("m.safetensors"), {4, 16, 2, 8, 1});  // 4 blocks 16 wide, norm, head 16 -> 8
  SafetensorsFile f(path("m.safetensors"));
  ModelSpec m = load_model(f);
  ASSERT_EQ(m.layers.size(), 6u);
  auto at = [](std::vector<std::pair<std::size_t, std::size_t>> ranges) {
    std::vector<StageRange> out;
    for (auto [a, b] : ranges) out.push_back({a, b, 0});
    return out;
  };
  EXPECT_TRUE(boundary_can_swing(m, at({{0, 2}, {2, 6}}), 0));
  EXPECT_FALSE(boundary_can_swing(m, at({{0, 2}, {2, 6}}), 1));      // no stage after the last
  EXPECT_FALSE(boundary_can_swing(m, at({{0, 5}, {5, 6}}), 0));      // the head: it would leave stage 1 nothing
  EXPECT_FALSE(boundary_can_swing(m, at({{0, 3}, {3, 4}, {4, 6}}), 0));  // stage 1 has one layer
  EXPECT_TRUE(boundary_can_swing(m, at({{0, 3}, {3, 4}, {4, 6}}), 1));   // the norm keeps the width
  // A layer that changes the width (10 -> 20) at the cut: the activation's size would depend on who
  // computed it.
  ModelSpec widening;
  for (auto [in, out] : std::vector<std::pair<std::size_t, std::size_t>>{{10, 10}, {10, 20}, {20, 20}}) {
    LayerSpec l;
    l.kind = LayerKind::linear, l.in = in, l.out = out;
    widening.layers.push_back(l);
  }
  EXPECT_FALSE(boundary_can_swing(widening, at({{0, 1}, {1, 3}}), 0));
}

TEST_F(Swing, SameBitsWhicheverStageComputesTheLayerAtTheCut) {
  write_example_model(path("m.safetensors"), {4, 16, 2, 8, 1});
  SafetensorsFile f(path("m.safetensors"));
  ModelSpec m = load_model(f);
  std::vector<StageRange> stages = {{0, 2, 0}, {2, 6, 0}};
  std::vector<float> x(3 * 16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<float> want;
  StageForward(f, m, 0, 6).forward(x, 3, want);

  SwingStage up(f, m, stages, 0, false, true), down(f, m, stages, 1, true, false);
  EXPECT_EQ(up.input_width(), 16u);
  EXPECT_EQ(down.input_width(), 16u);
  for (bool upstream_takes : {false, true}) {
    std::vector<float> mid, out;
    auto t = up.forward(x, 3, false, upstream_takes, mid, {});
    EXPECT_EQ(t.out_side.swing_per_row >= 0, upstream_takes);
    auto d = down.forward(mid, 3, upstream_takes, false, out, {});
    EXPECT_EQ(d.in_side.swing_per_row >= 0, !upstream_takes);  // it reports the layer when it computed it
    EXPECT_GT(d.in_side.own_per_row, 0);
    ASSERT_EQ(out.size(), want.size());
    EXPECT_EQ(std::memcmp(out.data(), want.data(), want.size() * sizeof(float)), 0) << "upstream took the cut's layer: " << upstream_takes;
  }
}
