#include "cnet/launcher/swing_stage.hpp"

#include <chrono>

namespace cnet::launcher {
namespace {
using Clock = std::chrono::steady_clock;
double per_row(Clock::time_point from, Clock::time_point to, std::size_t rows) {
  return std::chrono::duration<double>(to - from).count() / static_cast<double>(std::max<std::size_t>(rows, 1));
}
}  // namespace

SwingStage::SwingStage(const SafetensorsFile& weights, const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t stage,
                       bool first_swings, bool next_swings) {
  const StageRange& mine = stages.at(stage);
  if (first_swings) swing_in_ = std::make_unique<StageForward>(weights, model, mine.first, mine.first + 1);
  main_ = std::make_unique<StageForward>(weights, model, mine.first + (first_swings ? 1 : 0), mine.last);
  if (next_swings) {
    const std::size_t next = stages.at(stage + 1).first;
    swing_out_ = std::make_unique<StageForward>(weights, model, next, next + 1);
  }
}

std::size_t SwingStage::input_width() const { return swing_in_ ? swing_in_->input_width() : main_->input_width(); }

SwingStage::Timing SwingStage::forward(std::span<const float> in, std::size_t rows, bool first_done, bool take_next,
                                       std::vector<float>& out, const std::function<void()>& progress) {
  Timing t;
  auto start = Clock::now();
  double swing_in = 0;
  if (swing_in_ && !first_done) {
    swing_in_->forward(in, rows, staged_, progress);
    in = staged_;
    auto now = Clock::now();
    swing_in = per_row(start, now, rows);
    t.in_side.swing_per_row = swing_in;
    start = now;
  }
  main_->forward(in, rows, out, progress);
  const double own = per_row(start, Clock::now(), rows);
  double swing_out = 0;
  if (swing_out_ && take_next) {
    auto from = Clock::now();
    swing_out_->forward(out, rows, staged_, progress);
    out.swap(staged_);
    swing_out = per_row(from, Clock::now(), rows);
    t.out_side.swing_per_row = swing_out;
  }
  t.in_side.own_per_row = own + swing_out;
  t.out_side.own_per_row = own + swing_in;
  return t;
}

}  // namespace cnet::launcher
