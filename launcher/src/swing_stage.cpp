#include "cnet/launcher/swing_stage.hpp"

#include <chrono>
#include <stdexcept>

namespace cnet::launcher {
namespace {
using Clock = std::chrono::steady_clock;
std::unique_ptr<StageForward> one_layer(const SafetensorsFile& w, const ModelSpec& m, std::size_t layer) {
  return std::make_unique<StageForward>(w, m, layer, layer + 1);
}
}  // namespace

SwingStage::SwingStage(const SafetensorsFile& weights, const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t stage,
                       CutSwing before, CutSwing after)
    : before_(before), after_(after) {
  const StageRange& mine = stages.at(stage);
  if (before.give) prev_last_ = one_layer(weights, model, mine.first - 1);
  if (before.take) first_ = one_layer(weights, model, mine.first);
  main_ = std::make_unique<StageForward>(weights, model, mine.first + (before.take ? 1 : 0), mine.last - (after.give ? 1 : 0));
  if (after.give) last_ = one_layer(weights, model, mine.last - 1);
  if (after.take) next_first_ = one_layer(weights, model, mine.last);
  width_in_ = model.layers[mine.first].in;
  width_out_ = model.layers[mine.last - 1].out;
}

SwingStage::Timing SwingStage::forward(std::span<const float> in, std::size_t rows, CutMove arrived, CutMove move, std::vector<float>& out,
                                       const std::function<void()>& progress) {
  Timing t;
  const double per_row = 1.0 / static_cast<double>(std::max<std::size_t>(rows, 1));
  // Runs `part` on the activation so far, returning its seconds per row.
  std::span<const float> x = in;
  auto run = [&](StageForward& part) {
    std::vector<float>& into = x.data() == a_.data() ? b_ : a_;  // never the buffer it reads
    const auto start = Clock::now();
    part.forward(x, rows, into, progress);
    x = into;
    return std::chrono::duration<double>(Clock::now() - start).count() * per_row;
  };
  if ((arrived == CutMove::give && !prev_last_) || (arrived == CutMove::take && !first_) || (move == CutMove::give && !last_) ||
      (move == CutMove::take && !next_first_))
    throw std::logic_error("a layer moved across a cut that does not allow it (the stages disagree on the split)");
  double own = 0;
  if (arrived == CutMove::give) t.before.last_per_row = run(*prev_last_);
  if (first_ && arrived != CutMove::take) t.before.first_per_row = run(*first_);
  own += run(*main_);
  if (last_ && move != CutMove::give) t.after.last_per_row = run(*last_);
  if (move == CutMove::take) t.after.first_per_row = run(*next_first_);
  out.assign(x.begin(), x.end());
  t.before.own_per_row = own + std::max(t.after.last_per_row, 0.0) + std::max(t.after.first_per_row, 0.0);
  t.after.own_per_row = own + std::max(t.before.last_per_row, 0.0) + std::max(t.before.first_per_row, 0.0);
  return t;
}

}  // namespace cnet::launcher
