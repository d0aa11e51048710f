#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>

#include "cnet/inference/boundary_swing.hpp"
#include "cnet/inference/swing_stage.hpp"
#include "test_files.hpp"

using namespace cnet::inference;
using Swing = cnet::inference::test::ScratchDir;

namespace {
// Two stages' seconds per row on their own layers, and on either layer beside the cut.
struct Speeds {
  double up_own, down_own, up_layer, down_layer;
};
// A run of micro-batches of `rows` rows through two stages, timed as a pipeline: the downstream stage
// begins each when it has finished the one before and the upstream has sent it, and its reports reach
// the upstream `lag` micro-batches late. `finished`: when the downstream stage finished the last.
BoundarySwing run(BoundarySwing cut, const std::vector<Speeds>& speeds, std::size_t rows, std::size_t lag, double* finished = nullptr) {
  std::deque<SwingReport> in_flight;
  const double r = static_cast<double>(rows);
  double up_done = 0, down_done = 0;  // when each stage finished its last micro-batch
  for (std::size_t j = 0; j < speeds.size(); ++j) {
    const Speeds& s = speeds[j];
    const CutMove m = cut.next(rows, j + 1 == speeds.size());
    const bool up_last = m != CutMove::give, up_first = m == CutMove::take;
    up_done += r * (s.up_own + (up_last + up_first) * s.up_layer);
    cut.upstream_measured({s.up_own, up_last ? s.up_layer : -1, up_first ? s.up_layer : -1}, rows);
    const double slack = down_done - up_done;  // > 0: the input waited for the downstream stage
    down_done = std::max(down_done, up_done) + r * (s.down_own + (!up_last + !up_first) * s.down_layer);
    in_flight.push_back({s.down_own, up_last ? -1 : s.down_layer, up_first ? -1 : s.down_layer, slack});
    if (in_flight.size() > lag) cut.downstream_measured(in_flight.front(), rows), in_flight.pop_front();
  }
  while (!in_flight.empty()) cut.downstream_measured(in_flight.front(), rows), in_flight.pop_front();
  if (finished) *finished = down_done;
  return cut;
}
std::vector<Speeds> steady(Speeds s, std::size_t n) { return std::vector<Speeds>(n, s); }
double share(std::size_t n, const BoundarySwing& cut) { return static_cast<double>(n) / static_cast<double>(cut.decided()); }
}  // namespace

TEST(BoundarySwing, GivesTheFirstMicroBatchThenKeepsThePlannedSplitUntilTheDownstreamStageReports) {
  BoundarySwing cut;
  EXPECT_EQ(cut.next(10), CutMove::give);  // the downstream stage has nothing to do until it arrives
  cut.upstream_measured({1.0, -1, -1}, 10);
  EXPECT_EQ(cut.next(10), CutMove::keep);
  EXPECT_EQ(cut.next(10), CutMove::keep);
  EXPECT_EQ(cut.next(10, true), CutMove::take);  // the last takes the layer back: the upstream is done
  EXPECT_EQ(cut.decided(), 4u);
  // Only where the layer can come back at the end; and a lone micro-batch gains nothing either way.
  BoundarySwing no_give(CutSwing{false, true}), no_take(CutSwing{true, false}), lone;
  EXPECT_EQ(no_give.next(10), CutMove::keep);
  EXPECT_EQ(no_take.next(10), CutMove::keep);
  EXPECT_EQ(no_take.next(10, true), CutMove::keep);
  EXPECT_EQ(lone.next(10, true), CutMove::keep);
}

TEST(BoundarySwing, FillsAndDrainsThePipelineALayerSooner) {
  // Two equal stages of 8 layers: fixed, the downstream stage starts after the upstream's 8 layers and
  // ends 33 micro-batches' worth of 8 layers after the start. With the first micro-batch's layer given
  // on and the last's taken back, it starts a layer sooner and its last micro-batch is a layer shorter.
  const std::size_t rows = 10;
  for (std::size_t batches : {2, 3, 32}) {
    double fixed = 0, swinging = 0;
    run(BoundarySwing(CutSwing{false, false}), steady({0.7, 0.7, 0.1, 0.1}, batches), rows, 1, &fixed);
    auto cut = run(BoundarySwing{}, steady({0.7, 0.7, 0.1, 0.1}, batches), rows, 1, &swinging);
    EXPECT_NEAR(fixed, static_cast<double>(batches + 1) * 8, 1e-9);
    EXPECT_NEAR(swinging, fixed - rows * 0.1, 1e-9) << batches << " micro-batches";
    EXPECT_EQ(cut.given(), 1u);
    EXPECT_EQ(cut.taken(), 1u);
  }
}

TEST(BoundarySwing, EvensOutASlowerDownstreamStage) {
  // The downstream stage is 10% slower on its own layers; a layer beside the cut costs a fifth of them.
  // Evened out, the upstream takes the downstream's first layer for (1.1 - 1.0) / 0.4 = 25% of the
  // micro-batches, and the two stages' time differs by a few layers' over the run (200 s of 2600
  // without it): the downstream keeps a little input queued, so that taking a layer never starves it.
  auto cut = run(BoundarySwing{}, steady({1.0, 1.1, 0.2, 0.2}, 200), 10, 2);
  EXPECT_NEAR(share(cut.taken(), cut), 0.25, 0.03);
  EXPECT_EQ(cut.given(), 1u);  // the first micro-batch's only
  EXPECT_LT(std::fabs(cut.upstream_seconds() - cut.downstream_seconds()), 3 * 10 * 0.2);
}

TEST(BoundarySwing, EvensOutASlowerUpstreamStage) {
  // Now the upstream is 10% slower: it leaves its last layer to the downstream for a quarter of them.
  auto cut = run(BoundarySwing{}, steady({1.1, 1.0, 0.2, 0.2}, 200), 10, 2);
  EXPECT_NEAR(share(cut.given(), cut), 0.25, 0.03);
  EXPECT_EQ(cut.taken(), 1u);  // the last micro-batch's only
  EXPECT_LT(std::fabs(cut.upstream_seconds() - cut.downstream_seconds()), 3 * 10 * 0.2);
}

TEST(BoundarySwing, EvenAlsoFromAShortRun) {
  // 32 micro-batches, 2 decided before the first report, the downstream 1% slower: the totals still
  // end within a layer's time.
  auto cut = run(BoundarySwing{}, steady({1.0, 1.01, 0.06, 0.06}, 32), 128, 2);
  EXPECT_LT(std::fabs(cut.upstream_seconds() - cut.downstream_seconds()), 128 * 0.06);
  EXPECT_GT(cut.taken(), 0u);
}

TEST(BoundarySwing, MovesOnlyTheWaysTheCutAllows) {
  auto only_take = run(BoundarySwing{{false, true}}, steady({1.3, 1.0, 0.2, 0.2}, 50), 10, 2);
  EXPECT_EQ(only_take.taken() + only_take.given(), 0u);  // the upstream is slower, and may not give
  auto only_give = run(BoundarySwing{{true, false}}, steady({1.0, 1.3, 0.2, 0.2}, 50), 10, 2);
  EXPECT_EQ(only_give.taken() + only_give.given(), 0u);
}

TEST(BoundarySwing, TakesALayerOnlyWhileTheDownstreamStageHasInputWaiting) {
  // Behind in computing time, yet its input arrives just in time (in lockstep): taking a layer would
  // only make it wait that much longer for the micro-batch.
  BoundarySwing cut;
  EXPECT_EQ(cut.next(10), CutMove::give);  // the first micro-batch, measured below
  cut.upstream_measured({1.0, 0.2, -1}, 10);
  cut.downstream_measured({1.5, -1, 0.2, 0.1}, 10);
  EXPECT_EQ(cut.next(10), CutMove::keep);
  cut.downstream_measured({1.5, -1, 0.2, 1.5}, 10);  // its input now waited longer than the layer takes
  EXPECT_EQ(cut.next(10), CutMove::take);
}

TEST(BoundarySwing, GivesALayerWheneverTheUpstreamStageIsBehind) {
  // Giving sends the micro-batch sooner: no waiting downstream is needed for it.
  BoundarySwing cut;
  EXPECT_EQ(cut.next(10), CutMove::give);  // the first micro-batch, measured below
  cut.upstream_measured({1.5, 0.2, -1}, 10);
  cut.downstream_measured({1.0, -1, 0.2, 2.0}, 10);
  EXPECT_EQ(cut.next(10), CutMove::give);
}

TEST(BoundarySwing, AssumesTheOtherSidesLayerCostUntilItHasItsOwn) {
  // Only the downstream stage has computed its first layer (0.4 s a row); the upstream takes it to
  // cost as much there.
  BoundarySwing cut{{false, true}};
  cut.upstream_measured({0.5, -1, -1}, 1);
  cut.downstream_measured({1.0, -1, 0.4, 1.0}, 1);  // for a micro-batch decided before: nothing pending
  // So far 0.5 against 1.4. Taking: 0.5 + 0.9 vs 1.4 + 1.0 (1.0 apart); keeping: 1.0 vs 2.8 (1.8 apart).
  EXPECT_EQ(cut.next(1), CutMove::take);
  cut.upstream_measured({0.5, -1, 2.0}, 1);  // it took 2.0 here: its own measure from now on
  cut.downstream_measured({1.0, -1, -1, 1.0}, 1);
  // 2.5 against 2.4, then taking: 2.5 + 2.5 vs 2.4 + 1.0; keeping: 2.5 + 0.5 vs 2.4 + 1.4.
  EXPECT_EQ(cut.next(1), CutMove::keep);
}

TEST(BoundarySwing, FollowsSpeedsThatChange) {
  auto speeds = steady({1.0, 1.0, 0.2, 0.2}, 40);
  auto busier = steady({1.0, 1.2, 0.2, 0.2}, 40);  // the downstream node got busier
  speeds.insert(speeds.end(), busier.begin(), busier.end());
  auto cut = run(BoundarySwing{}, speeds, 10, 2);
  // Even at first; then 1.2 + 0.2 t = 1.4 - 0.2 t: half of the second forty.
  EXPECT_GE(cut.taken(), 15u);
  EXPECT_LE(cut.taken(), 25u);
}

TEST(BoundarySwing, AReportThatMeasuredNothingCountsForNothing) {
  BoundarySwing cut;
  EXPECT_EQ(cut.next(10), CutMove::give);  // the first micro-batch, measured below
  cut.upstream_measured({std::nan(""), -1, -1}, 10);
  cut.downstream_measured({-1, -1, -1, 0}, 10);
  EXPECT_EQ(cut.upstream_seconds(), 0);
  EXPECT_EQ(cut.downstream_seconds(), 0);
  EXPECT_EQ(cut.next(10), CutMove::keep);
}

namespace {
std::vector<StageRange> at(std::vector<std::pair<std::size_t, std::size_t>> ranges) {
  std::vector<StageRange> out;
  for (auto [a, b] : ranges) out.push_back({a, b, 0});
  return out;
}
}  // namespace

TEST_F(Swing, WaysEachCutMayMove) {
  write_example_model(path("m.safetensors"), {4, 16, 2, 8, 1});  // 4 blocks 16 wide (0-3), norm (4), head 16 -> 8 (5)
  SafetensorsFile f(path("m.safetensors"));
  ModelSpec m = load_model(f);
  ASSERT_EQ(m.layers.size(), 6u);
  auto cuts = plan_cut_swings(m, at({{0, 3}, {3, 6}}));
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_TRUE(cuts[0].give && cuts[0].take);
  cuts = plan_cut_swings(m, at({{0, 1}, {1, 6}}));
  EXPECT_TRUE(!cuts[0].give && cuts[0].take);  // stage 0's only layer stays
  cuts = plan_cut_swings(m, at({{0, 5}, {5, 6}}));
  EXPECT_TRUE(cuts[0].give && !cuts[0].take);  // the head is stage 1's only layer (and changes the width)
  // Three stages: stage 1 (layers 2-3) may lose its first to stage 0, so it cannot also give its last.
  cuts = plan_cut_swings(m, at({{0, 2}, {2, 4}, {4, 6}}));
  ASSERT_EQ(cuts.size(), 2u);
  EXPECT_TRUE(cuts[0].give && cuts[0].take);
  EXPECT_TRUE(!cuts[1].give && cuts[1].take);  // the norm keeps the width
  // A layer that changes the width (10 -> 20) beside the cut: the activation's size would depend on who
  // computed it.
  ModelSpec widening;
  for (auto [in, out] : std::vector<std::pair<std::size_t, std::size_t>>{{10, 10}, {10, 20}, {20, 20}, {20, 20}}) {
    LayerSpec l;
    l.kind = LayerKind::linear, l.in = in, l.out = out;
    widening.layers.push_back(l);
  }
  cuts = plan_cut_swings(widening, at({{0, 2}, {2, 4}}));
  EXPECT_TRUE(!cuts[0].give && cuts[0].take);
  cuts = plan_cut_swings(widening, at({{0, 1}, {1, 4}}));
  EXPECT_TRUE(!cuts[0].give && !cuts[0].take);
}

TEST_F(Swing, SameBitsWhicheverStageComputesTheLayersBesideTheCut) {
  write_example_model(path("m.safetensors"), {4, 16, 2, 8, 1});
  SafetensorsFile f(path("m.safetensors"));
  ModelSpec m = load_model(f);
  std::vector<float> x(3 * 16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<float> want;
  StageForward(&f, m, 0, 6).forward(x, 3, want);
  auto same = [&](const std::vector<float>& got) { return got.size() == want.size() && std::memcmp(got.data(), want.data(), want.size() * 4) == 0; };

  auto stages = at({{0, 3}, {3, 6}});
  auto cuts = plan_cut_swings(m, stages);
  SwingStage up(&f, m, stages, 0, {}, cuts[0]), down(&f, m, stages, 1, cuts[0], {});
  EXPECT_EQ(up.output_width(), 16u);
  EXPECT_EQ(down.input_width(), 16u);
  for (CutMove move : {CutMove::give, CutMove::keep, CutMove::take}) {
    std::vector<float> mid, out;
    auto t = up.forward(x, 3, CutMove::keep, move, mid, {});
    EXPECT_EQ(t.after.last_per_row >= 0, move != CutMove::give);
    EXPECT_EQ(t.after.first_per_row >= 0, move == CutMove::take);
    auto d = down.forward(mid, 3, move, CutMove::keep, out, {});
    EXPECT_EQ(d.before.last_per_row >= 0, move == CutMove::give);  // each reports the layers it computed
    EXPECT_EQ(d.before.first_per_row >= 0, move != CutMove::take);
    EXPECT_GT(d.before.own_per_row, 0);
    EXPECT_TRUE(same(out)) << "move " << static_cast<int>(move);
  }
  // A middle stage between two cuts, whatever arrives and whatever it does at the cut after it.
  stages = at({{0, 2}, {2, 4}, {4, 6}});
  cuts = plan_cut_swings(m, stages);
  SwingStage s0(&f, m, stages, 0, {}, cuts[0]), s1(&f, m, stages, 1, cuts[0], cuts[1]), s2(&f, m, stages, 2, cuts[1], {});
  for (CutMove first : {CutMove::give, CutMove::keep, CutMove::take})
    for (CutMove second : {CutMove::keep, CutMove::take}) {
      std::vector<float> a, b, out;
      s0.forward(x, 3, CutMove::keep, first, a, {});
      s1.forward(a, 3, first, second, b, {});
      s2.forward(b, 3, second, CutMove::keep, out, {});
      EXPECT_TRUE(same(out)) << "moves " << static_cast<int>(first) << ", " << static_cast<int>(second);
    }
}
