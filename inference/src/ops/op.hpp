#pragma once
// One operator's kernel: what it checks at load, what it costs and how it runs. One file per operator
// (or per family sharing one kernel, as the element-wise ones do); ops/registry.cpp lists them.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cnet/inference/graph.hpp"
#include "cnet/inference/safetensors.hpp"

namespace cnet::inference::ops {

// A tensor as a kernel sees it: the batch dimension first for a batched value.
struct In {
  std::span<const float> data;
  std::vector<std::int64_t> shape;
  const Value* value = nullptr;  // the graph's (constants carry their integers there)
};
struct Out {
  std::vector<float>* data = nullptr;  // resized by the kernel to the shape's elements
  std::vector<std::int64_t> shape;     // the shape the graph says, batch first
};

struct OpKernel {
  const char* name;
  // Refuses, at load, what this kernel does not do (an attribute value, a dtype), naming the node.
  void (*check)(const Graph& graph, const Node& node);
  // Multiply-adds count 2, per sample.
  double (*flops)(const Graph& graph, const Node& node);
  void (*run)(const Node& node, std::span<const In> in, std::span<Out> out);
};

// The kernel for an ONNX op type, or nullptr.
const OpKernel* find_kernel(const std::string& op);
// Every op type a kernel exists for, sorted: what an error about an unsupported op lists.
std::vector<std::string> supported_ops();

std::size_t elements(std::span<const std::int64_t> shape);
// Per-sample elements of a graph value's shape.
inline double per_sample(const Graph& g, int v) { return v < 0 ? 0.0 : static_cast<double>(g.values[v].elements()); }
void no_check(const Graph&, const Node&);
double no_flops(const Graph&, const Node&);
// Where a node asks for something a kernel does not do: FormatError naming the node and the fix.
[[noreturn]] void unsupported(const Node& node, const std::string& what);

}  // namespace cnet::inference::ops
