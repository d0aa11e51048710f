#pragma once
// The forward pass of a run of consecutive layers on the CPU: GEMMs through OpenBLAS, the element-wise
// and per-row layers in plain loops with a fixed summation order. The same layer on the same micro-batch
// gives the same bits in any process, so a pipeline's output can be checked bit for bit against one
// process running the whole model.

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cnet/inference/model.hpp"

namespace cnet::inference {

// A stage's layers on some device: the pipeline hands it micro-batches and lets transfers progress
// while it computes.
class StageCompute {
 public:
  virtual ~StageCompute() = default;
  virtual std::size_t input_width() const = 0;
  virtual std::size_t output_width() const = 0;
  // rows x input_width() -> rows x output_width(). `progress` runs repeatedly while it computes (after
  // every layer on the CPU, while waiting for the GPU), so transfers move meanwhile.
  virtual void forward(std::span<const float> in, std::size_t rows, std::vector<float>& out, const std::function<void()>& progress = {}) = 0;
  virtual std::string device() const = 0;  // "CPU, OpenBLAS 1 thread", "GPU 0 (NVIDIA H200), cuBLAS"
  // GPU stages linked over NCCL take their input from the previous stage and hand their output to the
  // next one themselves: forward() then ignores `in` or leaves `out` empty, and the pipeline moves
  // nothing for that side.
  virtual bool input_arrives_directly() const { return false; }
  virtual bool output_leaves_directly() const { return false; }
  // The rows of the micro-batch after the one the next forward() takes (0: none), told before that
  // forward(): a stage that receives its own input starts receiving the next while it computes.
  virtual void expect_next(std::size_t /*rows*/) {}
  // After the last forward(): returns once what the stage sent itself has left.
  virtual void finish(const std::function<void()>& /*progress*/) {}
};

class StageForward : public StageCompute {
 public:
  // Layers [first, last) of the model; F16/BF16 weights are converted once, F32 ones used in place.
  // `weights` holds a layer list's tensors; a graph model's (weights null) are in its graph.
  StageForward(const SafetensorsFile* weights, const ModelSpec& model, std::size_t first, std::size_t last);

  std::size_t input_width() const override { return layers_.front().spec.in; }
  std::size_t output_width() const override { return layers_.back().spec.out; }
  void forward(std::span<const float> in, std::size_t rows, std::vector<float>& out,
               const std::function<void()>& between_layers = {}) override;
  std::string device() const override;

  // Model layers [from, to), a part of this stage's, `in` being layer `from`'s input; `after_layer` gets
  // each layer's model index once it is done. A stage whose cut swings runs a different part of its
  // layers per micro-batch on this one object: every layer then works in the same scratch buffers,
  // which stay in cache from layer to layer (a part of its own costs its moved layer about 1% more).
  void forward_layers(std::size_t from, std::size_t to, std::span<const float> in, std::size_t rows, std::vector<float>& out,
                      const std::function<void(std::size_t layer)>& after_layer);
  std::size_t first_layer() const { return first_; }
  std::size_t end_layer() const { return first_ + layers_.size(); }

 private:
  struct Bound {
    LayerSpec spec;
    std::span<const float> w, b, w2, b2, gamma, beta;
  };
  std::size_t first_ = 0;  // the model index of layers_[0]
  std::vector<Bound> layers_;
  std::vector<std::vector<float>> converted_;  // storage for weights that were not F32
  std::vector<float> a_, b_, tmp_, hidden_;
  std::unique_ptr<GraphRunner> graph_;  // a graph model's segments run here
};

// BLAS threads for this process (OpenBLAS); 1 keeps stages from fighting over cores.
void set_blas_threads(int threads);

}  // namespace cnet::inference
