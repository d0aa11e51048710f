#include "cnet/inference/boundary_swing.hpp"

#include <algorithm>
#include <cmath>

namespace cnet::inference {

std::vector<CutSwing> plan_cut_swings(const ModelSpec& model, const std::vector<StageRange>& stages) {
  std::vector<CutSwing> cuts;
  auto keeps_width = [&](std::size_t layer) { return model.layers.at(layer).in == model.layers.at(layer).out; };
  for (std::size_t k = 0; k + 1 < stages.size(); ++k) {
    const StageRange &up = stages[k], &down = stages[k + 1];
    CutSwing c;
    // The upstream's layers that never move: all but its first, where the cut before it may take that,
    // and its last, where this cut gives it.
    const std::size_t up_fixed = up.last - up.first - (k > 0 && cuts[k - 1].take ? 1 : 0);
    c.give = up_fixed >= 2 && keeps_width(up.last - 1);
    c.take = down.last - down.first >= 2 && keeps_width(down.first);
    cuts.push_back(c);
  }
  return cuts;
}

void BoundarySwing::Recent::add(double x) { last_[count_++ % last_.size()] = x; }

std::optional<double> BoundarySwing::Recent::median() const {
  if (count_ == 0) return std::nullopt;
  std::array<double, 7> v = last_;
  const auto n = static_cast<std::ptrdiff_t>(std::min(count_, v.size()));
  std::nth_element(v.begin(), v.begin() + n / 2, v.begin() + n);
  return v[static_cast<std::size_t>(n / 2)];
}

void BoundarySwing::Side::add(const SwingReport& r) {
  own.add(r.own_per_row);
  if (r.last_per_row >= 0) last.add(r.last_per_row);
  if (r.first_per_row >= 0) first.add(r.first_per_row);
}

namespace {
// Seconds one micro-batch took as reported; 0 for a report that measured nothing (NaN, negative).
double seconds_of(const SwingReport& r, std::size_t rows) {
  if (!(r.own_per_row >= 0) || std::isnan(r.last_per_row) || std::isnan(r.first_per_row)) return 0;
  return static_cast<double>(rows) * (r.own_per_row + std::max(r.last_per_row, 0.0) + std::max(r.first_per_row, 0.0));
}
}  // namespace

void BoundarySwing::upstream_measured(const SwingReport& r, std::size_t rows) {
  if (const double s = seconds_of(r, rows); s > 0) up_total_ += s, up_.add(r);
}

void BoundarySwing::downstream_measured(const SwingReport& r, std::size_t rows) {
  if (!unreported_.empty()) unreported_.pop_front();
  last_slack_ = r.slack;
  if (const double s = seconds_of(r, rows); s > 0) down_total_ += s, down_.add(r);
}

CutMove BoundarySwing::next(std::size_t rows, bool last) {
  ++decided_;
  auto decide = [&](CutMove m) {
    unreported_.push_back({rows, m});
    taken_ += m == CutMove::take;
    given_ += m == CutMove::give;
    return m;
  };
  // Filling and draining: the downstream stage has nothing to do until the first micro-batch arrives,
  // and the upstream nothing after the last, so the first goes on a layer sooner and the last takes
  // that layer back. Each end of the pipeline is a layer shorter; in between the layer counts as owed.
  if (decided_ == 1 && !last && may_.give && may_.take) {
    owed_rows_ = rows;
    return decide(CutMove::give);
  }
  if (last && owed_rows_ > 0) {
    owed_rows_ = 0;
    return decide(CutMove::take);
  }
  const auto uo = up_.own.median(), dn = down_.own.median();
  if (!uo || !dn) return decide(CutMove::keep);
  // A layer's cost on the side that has not computed it yet: the other side's, until it has (the stages'
  // own layers tell little of their CPUs' speeds: they are different layers, in different numbers).
  auto cost = [](const Recent& mine, const Recent& theirs) { return mine.median() ? mine.median() : theirs.median(); };
  const auto up_last = cost(up_.last, down_.last), down_last = cost(down_.last, up_.last);
  const auto up_first = cost(up_.first, down_.first), down_first = cost(down_.first, up_.first);
  // Each side's seconds per row for a move: the upstream computes its last layer unless it gives it,
  // and the downstream's first only if it takes it.
  auto up_per_row = [&](CutMove m) { return *uo + (m != CutMove::give ? up_last.value_or(0) : 0) + (m == CutMove::take ? *up_first : 0); };
  auto down_per_row = [&](CutMove m) {
    return *dn + (m == CutMove::give ? down_last.value_or(0) : 0) + (m != CutMove::take ? down_first.value_or(0) : 0);
  };
  const double owed = static_cast<double>(owed_rows_);
  const double up = up_total_ + owed * up_first.value_or(0);
  double down = down_total_ - owed * down_first.value_or(0);
  for (const Pending& p : unreported_) down += static_cast<double>(p.rows) * down_per_row(p.move);
  const double r = static_cast<double>(rows);
  auto gap = [&](CutMove m) { return std::fabs(up + r * up_per_row(m) - (down + r * down_per_row(m))); };
  CutMove best = CutMove::keep;
  if (may_.take && up_first && down_first && last_slack_ >= 0.5 * r * *up_first && gap(CutMove::take) < gap(best)) best = CutMove::take;
  if (may_.give && up_last && down_last && gap(CutMove::give) < gap(best)) best = CutMove::give;
  return decide(best);
}

}  // namespace cnet::inference
