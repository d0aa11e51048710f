#pragma once
// The forward pass of a run of consecutive layers on the CPU: GEMMs through OpenBLAS, the element-wise
// and per-row layers in plain loops with a fixed summation order. The same layer on the same micro-batch
// gives the same bits in any process, so a pipeline's output can be checked bit for bit against one
// process running the whole model.

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "cnet/launcher/model.hpp"

namespace cnet::launcher {

class StageForward {
 public:
  // Layers [first, last) of the model; F16/BF16 weights are converted once, F32 ones used in place.
  StageForward(const SafetensorsFile& weights, const ModelSpec& model, std::size_t first, std::size_t last);

  std::size_t input_width() const { return layers_.front().spec.in; }
  std::size_t output_width() const { return layers_.back().spec.out; }

  // rows x input_width() -> rows x output_width(). `between_layers` runs after every layer (the pipeline
  // uses it to let transfers progress while it computes).
  void forward(std::span<const float> in, std::size_t rows, std::vector<float>& out,
               const std::function<void()>& between_layers = {});

 private:
  struct Bound {
    LayerSpec spec;
    std::span<const float> w, b, w2, b2, gamma, beta;
  };
  std::vector<Bound> layers_;
  std::vector<std::vector<float>> converted_;  // storage for weights that were not F32
  std::vector<float> a_, b_, tmp_, hidden_;
};

// BLAS threads for this process (OpenBLAS); 1 keeps stages from fighting over cores.
void set_blas_threads(int threads);

}  // namespace cnet::launcher
