#pragma once
// A sequential network stored in a safetensors file: the weights as tensors, the layer list as JSON in
// the header's __metadata__ under "cnet.layers" (or in a file beside it, MODEL.layers.json). Layers:
//   {"type":"linear","weight":W,"bias":B?}            y = x W^T + b, W is [out, in] (PyTorch's layout)
//   {"type":"relu"} {"type":"gelu"} {"type":"softmax"}  element-wise / per row
//   {"type":"layernorm","weight":G,"bias":B,"eps":1e-5}
//   {"type":"residual_mlp","norm_weight":G?,"norm_bias":B?,"fc1_weight":W1,"fc1_bias":B1?,
//    "fc2_weight":W2,"fc2_bias":B2?,"activation":"gelu"|"relu","eps":1e-5}   y = x + fc2(act(fc1(ln(x))))
// load_model checks every layer against the tensors (names, dtypes, shapes, the width chain) and names
// the layer and tensor that is wrong, before any rank computes.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cnet/inference/graph.hpp"
#include "cnet/inference/safetensors.hpp"

namespace cnet::inference {

// graph_segment: one segment of an operator graph (an ONNX model), see graph.hpp.
enum class LayerKind { linear, relu, gelu, softmax, layernorm, residual_mlp, graph_segment };

struct LayerSpec {
  LayerKind kind = LayerKind::linear;
  std::size_t in = 0, out = 0;   // row width before and after
  std::size_t hidden = 0;        // residual_mlp: fc1's width
  std::string weight, bias;      // linear, layernorm (gamma/beta)
  std::string fc1_weight, fc1_bias, fc2_weight, fc2_bias;
  LayerKind activation = LayerKind::gelu;  // residual_mlp
  float eps = 1e-5f;
  std::size_t segment = 0;       // graph_segment: its index in the graph
  double flops = 0;              // graph_segment: per row
  double seconds = 0;            // graph_segment: per row, as the job's ranks timed it at load; 0: not agreed
  std::string text;              // graph_segment: what it holds, for messages
  // Estimated work per row, for balancing stages: FLOPs, or a graph's agreed seconds once it has them.
  double cost() const;
  std::string describe() const;  // "linear 4096->4096"
};

struct ModelSpec {
  std::vector<LayerSpec> layers;
  std::shared_ptr<Graph> graph;  // an operator graph's model: its layers are the graph's segments
  std::size_t input_width() const { return layers.front().in; }
  std::size_t output_width() const { return layers.back().out; }
};

ModelSpec load_model(const SafetensorsFile& weights);  // throws FormatError

// A model file as cnet-run takes it: an ONNX file (by its .onnx name), whose graph holds its own weights,
// or a safetensors file with its layer list. Throws FormatError naming what is wrong.
struct LoadedModel {
  std::unique_ptr<SafetensorsFile> weights;  // the layer list's; null for a graph
  ModelSpec spec;
};
LoadedModel open_model(const std::string& path);
// An ONNX model's graph as segments: the layers of its ModelSpec.
ModelSpec graph_model(std::shared_ptr<Graph> graph);
// This rank's load-time seconds per layer of a graph's model (empty for a layer list).
std::vector<double> timed_seconds(const ModelSpec& model);
// Gives a graph's layers the median over ranks of their timed seconds (one list per rank, from
// timed_seconds): every rank gets the same costs, so all cut the stages alike. Throws FormatError when
// a rank's list does not match this model (another model file on that node).
void agree_on_timed_costs(ModelSpec& model, const std::vector<std::vector<double>>& per_rank);

// What `cnet-run make-model` writes: `layers` residual MLP blocks of width `hidden` (fc1 to 4*hidden,
// GELU), with a LayerNorm and a linear head of width `outputs`, weights drawn from a fixed seed.
struct ExampleModel {
  std::size_t layers = 8, hidden = 512, outputs = 0;  // outputs 0: same as hidden
  std::size_t expansion = 4;
  unsigned seed = 1;
  std::string dtype = "F32";  // every tensor's: F32, F16 or BF16 (rounded from the same F32 draws)
};
void write_example_model(const std::string& path, const ExampleModel& model);
void write_example_input(const std::string& path, std::size_t rows, std::size_t width, unsigned seed);

}  // namespace cnet::inference
