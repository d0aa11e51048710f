#include "cnet/launcher/boundary_swing.hpp"

#include <algorithm>
#include <cmath>

namespace cnet::launcher {

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
  if (r.swing_per_row >= 0) swing.add(r.swing_per_row);
}

namespace {
// Seconds one micro-batch took as reported; 0 for a report that measured nothing (NaN, negative).
double seconds_of(const SwingReport& r, std::size_t rows) {
  if (!(r.own_per_row >= 0) || std::isnan(r.swing_per_row)) return 0;
  return static_cast<double>(rows) * (r.own_per_row + std::max(r.swing_per_row, 0.0));
}
}  // namespace

void BoundarySwing::upstream_measured(const SwingReport& r, std::size_t rows) {
  if (const double s = seconds_of(r, rows); s > 0) up_total_ += s, up_.add(r);
}

void BoundarySwing::downstream_measured(const SwingReport& r, std::size_t rows) {
  last_slack_ = r.slack;
  if (!unreported_.empty()) unreported_.pop_front();
  if (const double s = seconds_of(r, rows); s > 0) down_total_ += s, down_.add(r);
}

bool BoundarySwing::take_next(std::size_t rows) {
  ++decided_;
  auto take = [&](bool t) {
    unreported_.push_back({rows, t});
    taken_ += t;
    return t;
  };
  const auto uo = up_.own.median(), dro = down_.own.median();
  if (!uo || !dro) return take(false);
  // The swing layer's cost on each side; where only one side has computed it, the other side's, scaled
  // by their speeds on their own layers (the layer is the same, the CPUs differ).
  auto su = up_.swing.median(), sd = down_.swing.median();
  if (!su && !sd) return take(false);
  if (!su) su = *sd * (*uo / std::max(*dro, 1e-30));
  if (!sd) sd = *su * (*dro / std::max(*uo, 1e-30));
  double down = down_total_;
  for (const Pending& p : unreported_) down += static_cast<double>(p.rows) * (*dro + (p.taken ? 0 : *sd));
  const double r = static_cast<double>(rows);
  const double if_taken = std::fabs(up_total_ + r * (*uo + *su) - (down + r * *dro));
  const double if_left = std::fabs(up_total_ + r * *uo - (down + r * (*dro + *sd)));
  // Only while the downstream stage's input waits for it at least half as long as the layer takes here:
  // in lockstep, the layer taken here only delays the micro-batch there by as much as it saves it.
  return take(if_taken < if_left && last_slack_ >= 0.5 * r * *su);
}

bool boundary_can_swing(const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t upstream) {
  if (upstream + 1 >= stages.size()) return false;
  const StageRange& down = stages[upstream + 1];
  if (down.last - down.first < 2) return false;
  const LayerSpec& layer = model.layers.at(down.first);
  return layer.in == layer.out;
}

}  // namespace cnet::launcher
