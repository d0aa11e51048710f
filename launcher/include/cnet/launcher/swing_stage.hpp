#pragma once
// A CPU stage at a cut that swings (boundary_swing.hpp): its first layer may arrive already computed by
// the stage before, and it may compute the next stage's first layer itself. Held as three runs of
// layers so each part can be left out and timed.

#include <memory>

#include "cnet/launcher/boundary_swing.hpp"
#include "cnet/launcher/forward.hpp"

namespace cnet::launcher {

class SwingStage : public StageCompute {
 public:
  // `first_swings`: the stage before may compute this stage's first layer; `next_swings`: this stage
  // may compute the next stage's first layer (stages[stage + 1].first).
  SwingStage(const SafetensorsFile& weights, const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t stage,
             bool first_swings, bool next_swings);

  bool first_swings() const { return swing_in_ != nullptr; }
  bool next_swings() const { return swing_out_ != nullptr; }

  // Seconds per row on the layers this stage always computes, and on the swing layers when computed.
  struct Timing {
    SwingReport in_side;   // reported to the stage before: own layers (and the next swing layer), its swing layer
    SwingReport out_side;  // what the boundary after this stage counts as this side: all but the next swing layer
  };
  // `first_done`: the stage before computed this stage's first layer; `take_next`: compute the next
  // stage's first layer too.
  Timing forward(std::span<const float> in, std::size_t rows, bool first_done, bool take_next, std::vector<float>& out,
                 const std::function<void()>& progress);

  // As a plain stage: its own layers, no swing.
  std::size_t input_width() const override;
  std::size_t output_width() const override { return main_->output_width(); }
  void forward(std::span<const float> in, std::size_t rows, std::vector<float>& out, const std::function<void()>& progress = {}) override {
    forward(in, rows, false, false, out, progress);
  }
  std::string device() const override { return main_->device(); }

 private:
  std::unique_ptr<StageForward> swing_in_, main_, swing_out_;
  std::vector<float> staged_;
};

}  // namespace cnet::launcher
