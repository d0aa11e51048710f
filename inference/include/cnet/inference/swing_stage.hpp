#pragma once
// A CPU stage beside cuts that swing (boundary_swing.hpp). At the cut before it, the stage before may
// have left it that stage's last layer (give) or computed its first layer (take); at the cut after it,
// it may leave its own last layer to the next stage or compute the next stage's first. It holds every
// layer it may compute in one StageForward, runs the consecutive ones each micro-batch asks for, and
// times the layers beside each cut apart from its own.

#include <chrono>
#include <memory>
#include <vector>

#include "cnet/inference/boundary_swing.hpp"
#include "cnet/inference/forward.hpp"

namespace cnet::inference {

class SwingStage : public StageCompute {
 public:
  // `before`, `after`: how the cuts before and after this stage may move ({} where there is none).
  SwingStage(const SafetensorsFile* weights, const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t stage,
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
  std::string device() const override { return layers_->device(); }

 private:
  CutSwing before_, after_;
  std::size_t width_in_ = 0, width_out_ = 0;
  std::size_t first_ = 0, last_ = 0;  // the model layers [first_, last_) this stage holds when nothing moves
  // Those, with the previous stage's last layer where it may be given and the next stage's first
  // where it may be taken.
  std::unique_ptr<StageForward> layers_;
  std::vector<std::chrono::steady_clock::time_point> done_;  // when each layer of a micro-batch ended
};

}  // namespace cnet::inference
