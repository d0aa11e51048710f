#pragma once
// A CPU stage beside cuts that swing (boundary_swing.hpp). At the cut before it, the stage before may
// have left it that stage's last layer (give) or computed its first layer (take); at the cut after it,
// it may leave its own last layer to the next stage or compute the next stage's first. Held as runs
// of layers so each part can be left out and timed.

#include <memory>

#include "cnet/launcher/boundary_swing.hpp"
#include "cnet/launcher/forward.hpp"

namespace cnet::launcher {

class SwingStage : public StageCompute {
 public:
  // `before`, `after`: how the cuts before and after this stage may move ({} where there is none).
  SwingStage(const SafetensorsFile& weights, const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t stage,
             CutSwing before, CutSwing after);

  const CutSwing& before() const { return before_; }
  const CutSwing& after() const { return after_; }

  // Seconds per row on each part, as the two cuts count them.
  struct Timing {
    SwingReport before;  // this stage as the downstream of the cut before it, reported to that stage
    SwingReport after;   // this stage as the upstream of the cut after it
  };
  // `arrived`: what the stage before did at the cut before; `move`: what this stage does at the cut after.
  Timing forward(std::span<const float> in, std::size_t rows, CutMove arrived, CutMove move, std::vector<float>& out,
                 const std::function<void()>& progress);

  // As a plain stage: its own layers, nothing moved.
  std::size_t input_width() const override { return width_in_; }
  std::size_t output_width() const override { return width_out_; }
  void forward(std::span<const float> in, std::size_t rows, std::vector<float>& out, const std::function<void()>& progress = {}) override {
    forward(in, rows, CutMove::keep, CutMove::keep, out, progress);
  }
  std::string device() const override { return main_->device(); }

 private:
  CutSwing before_, after_;
  std::size_t width_in_ = 0, width_out_ = 0;
  // The previous stage's last layer, this stage's first, its fixed middle, its last, the next stage's first.
  std::unique_ptr<StageForward> prev_last_, first_, main_, last_, next_first_;
  std::vector<float> a_, b_;
};

}  // namespace cnet::launcher
