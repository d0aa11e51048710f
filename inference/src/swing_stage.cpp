#include "cnet/inference/swing_stage.hpp"

#include <chrono>
#include <stdexcept>

namespace cnet::inference {

SwingStage::SwingStage(const SafetensorsFile* weights, const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t stage,
                       CutSwing before, CutSwing after)
    : before_(before), after_(after) {
  const StageRange& mine = stages.at(stage);
  first_ = mine.first;
  last_ = mine.last;
  if (first_ + (before.take ? 1 : 0) >= last_ - (after.give ? 1 : 0))
    throw std::logic_error("a stage whose cuts swing must keep a layer that never moves");
  layers_ = std::make_unique<StageForward>(weights, model, first_ - (before.give ? 1 : 0), last_ + (after.take ? 1 : 0));
  width_in_ = model.layers[first_].in;
  width_out_ = model.layers[last_ - 1].out;
}

SwingStage::Timing SwingStage::forward(std::span<const float> in, std::size_t rows, CutMove arrived, CutMove move, std::vector<float>& out,
                                       const std::function<void()>& progress) {
  if ((arrived == CutMove::give && !before_.give) || (arrived == CutMove::take && !before_.take) ||
      (move == CutMove::give && !after_.give) || (move == CutMove::take && !after_.take))
    throw std::logic_error("a layer moved across a cut that does not allow it (the stages disagree on the split)");
  using Clock = std::chrono::steady_clock;
  const std::size_t from = arrived == CutMove::give ? first_ - 1 : arrived == CutMove::take ? first_ + 1 : first_;
  const std::size_t to = move == CutMove::give ? last_ - 1 : move == CutMove::take ? last_ + 1 : last_;
  // done[i]: when layer from + i - 1 ended (done[0]: when the first began).
  done_.resize(to - from + 1);
  done_[0] = Clock::now();
  layers_->forward_layers(from, to, in, rows, out, [&](std::size_t layer) {
    done_[layer - from + 1] = Clock::now();
    if (progress) progress();
  });
  // Seconds per row on model layers [a, b).
  const double per_row = 1.0 / static_cast<double>(std::max<std::size_t>(rows, 1));
  auto per_row_on = [&](std::size_t a, std::size_t b) { return std::chrono::duration<double>(done_[b - from] - done_[a - from]).count() * per_row; };
  Timing t;
  if (arrived == CutMove::give) t.before.last_per_row = per_row_on(first_ - 1, first_);
  if (before_.take && arrived != CutMove::take) t.before.first_per_row = per_row_on(first_, first_ + 1);
  const double own = per_row_on(first_ + (before_.take ? 1 : 0), last_ - (after_.give ? 1 : 0));
  if (after_.give && move != CutMove::give) t.after.last_per_row = per_row_on(last_ - 1, last_);
  if (move == CutMove::take) t.after.first_per_row = per_row_on(last_, last_ + 1);
  t.before.own_per_row = own + std::max(t.after.last_per_row, 0.0) + std::max(t.after.first_per_row, 0.0);
  t.after.own_per_row = own + std::max(t.before.last_per_row, 0.0) + std::max(t.before.first_per_row, 0.0);
  return t;
}

}  // namespace cnet::inference
