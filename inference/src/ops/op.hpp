#pragma once
// One operator's kernel: what it checks at load, how it runs and what it costs. A kernel computes its
// outputs' shapes from its inputs' (the batch may be anywhere), so one graph serves every micro-batch
// size. One file per operator or family sharing a kernel; ops/registry.cpp lists them.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cnet/inference/graph.hpp"
#include "cnet/inference/safetensors.hpp"

namespace cnet::inference::ops {

using Ins = std::span<const Tensor* const>;   // nullptr for an omitted optional input
using Outs = std::span<Tensor* const>;

struct OpKernel {
  const char* name;
  // Refuses, at load, what this kernel does not do (an attribute value), naming the node.
  void (*check)(const Node& node);
  void (*run)(const Node& node, Ins in, Outs out);
  // Multiply-adds count 2; measured on the tensors of a run (the load-time runs divide by the batch).
  double (*flops)(const Node& node, Ins in, Outs out);
  // The kernel may be given its first input as its output (the same Tensor) when nothing reads that
  // input later: element-wise and reshaping operators then work in place instead of allocating.
  bool in_place = false;
};

// The kernel for an ONNX op type, or nullptr.
const OpKernel* find_kernel(const std::string& op);
// Every op type a kernel exists for, sorted: what an error about an unsupported op lists.
std::vector<std::string> supported_ops();

// The values a shape holds; SIZE_MAX for a negative dimension or one past size_t.
std::size_t elements(std::span<const std::int64_t> shape);
// The same, refusing (FormatError naming `what`) a tensor of more than kMostElements: a damaged model
// must not make cnet allocate without bound.
constexpr std::size_t kMostElements = std::size_t{1} << 28;
std::size_t checked_elements(std::span<const std::int64_t> shape, const std::string& what);
void no_check(const Node&);
double no_flops(const Node&, Ins, Outs);
double output_elements(const Node&, Ins, Outs out);  // one operation per output element
// Where a node asks for something a kernel does not do: FormatError naming the node and what.
[[noreturn]] void unsupported(const Node& node, const std::string& what);
// An axis attribute or input, negative counted from the end, checked against the rank.
std::size_t axis_of(const Node& node, std::int64_t axis, std::size_t rank);
// An integer input's values (shape, axes, indices).
const std::vector<std::int64_t>& ints_of(const Node& node, const Tensor* t, const char* what);
// Sets `out` to `shape` of floats (or integers), sized.
void shape_floats(Tensor& out, std::vector<std::int64_t> shape);
void shape_ints(Tensor& out, std::vector<std::int64_t> shape);

}  // namespace cnet::inference::ops
