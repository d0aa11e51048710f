// Operators that keep the values in order and change only the shape: Identity, Flatten, Reshape,
// Squeeze, Unsqueeze (axes as an input since opset 13).
#include <algorithm>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

// In place (x is y) only the shape changes; else the values are copied.
void reshaped(const Tensor& x, Tensor& y, std::vector<std::int64_t> shape) {
  if (&x != &y) {
    y.integer = x.integer;
    y.f = x.f;
    y.i = x.i;
  }
  y.shape = std::move(shape);
}

void run_identity(const Node&, Ins in, Outs out) { reshaped(*in[0], *out[0], in[0]->shape); }

void run_flatten(const Node& n, Ins in, Outs out) {
  const auto& s = in[0]->shape;
  std::int64_t axis = n.attr_i("axis", 1);
  if (axis < 0) axis += static_cast<std::int64_t>(s.size());
  if (axis < 0 || axis > static_cast<std::int64_t>(s.size())) unsupported(n, "axis outside the tensor");
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(s.size()); ++d) (d < axis ? outer : inner) *= s[d];
  reshaped(*in[0], *out[0], {outer, inner});
}

// Reshape's target: 0 keeps that axis (unless allowzero), one -1 takes what is left.
void run_reshape(const Node& n, Ins in, Outs out) {
  std::vector<std::int64_t> shape = ints_of(n, in[1], "the shape");
  const bool allow_zero = n.attr_i("allowzero", 0) != 0;
  std::int64_t known = 1, infer = -1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (d >= in[0]->shape.size()) unsupported(n, "a 0 in the shape past the input's rank");
      shape[d] = in[0]->shape[d];
    }
    if (shape[d] == -1) {
      if (infer >= 0) unsupported(n, "more than one -1 in the shape");
      infer = static_cast<std::int64_t>(d);
    } else if (shape[d] < 0) {
      unsupported(n, "a negative size in the shape");
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      unsupported(n, "the shape's sizes overflow");
    }
  }
  const auto total = static_cast<std::int64_t>(in[0]->elements());
  if (infer >= 0) {
    if (known == 0 || total % known != 0) unsupported(n, "the shape does not divide the input's " + std::to_string(total) + " elements");
    shape[infer] = total / known;
  } else if (known != total) {
    unsupported(n, "the shape holds " + std::to_string(known) + " elements, the input " + std::to_string(total));
  }
  reshaped(*in[0], *out[0], shape);
}

std::vector<std::int64_t> axes(const Node& n, Ins in, std::size_t rank) {
  std::vector<std::int64_t> list = in.size() > 1 && in[1] ? ints_of(n, in[1], "axes") : n.attr_ints("axes");
  for (auto& a : list) a = static_cast<std::int64_t>(axis_of(n, a, rank));
  std::sort(list.begin(), list.end());
  return list;
}

void run_unsqueeze(const Node& n, Ins in, Outs out) {
  const auto& s = in[0]->shape;
  const std::size_t rank = s.size() + (in.size() > 1 && in[1] ? in[1]->elements() : n.attr_ints("axes").size());
  auto list = axes(n, in, rank);
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0, from = 0; d < rank; ++d)
    shape.push_back(std::binary_search(list.begin(), list.end(), static_cast<std::int64_t>(d)) ? 1 : s.at(from++));
  reshaped(*in[0], *out[0], shape);
}

void run_squeeze(const Node& n, Ins in, Outs out) {
  const auto& s = in[0]->shape;
  auto list = axes(n, in, s.size());
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < s.size(); ++d) {
    const bool named = std::binary_search(list.begin(), list.end(), static_cast<std::int64_t>(d));
    if (named && s[d] != 1) unsupported(n, "axis " + std::to_string(d) + " has size " + std::to_string(s[d]) + ", not 1");
    if (!(named || (list.empty() && s[d] == 1))) shape.push_back(s[d]);
  }
  reshaped(*in[0], *out[0], shape);
}

}  // namespace

extern const OpKernel kIdentity = {"Identity", no_check, run_identity, no_flops, true};
extern const OpKernel kFlatten = {"Flatten", no_check, run_flatten, no_flops, true};
extern const OpKernel kReshape = {"Reshape", no_check, run_reshape, no_flops, true};
extern const OpKernel kSqueeze = {"Squeeze", no_check, run_squeeze, no_flops, true};
extern const OpKernel kUnsqueeze = {"Unsqueeze", no_check, run_unsqueeze, no_flops, true};

}  // namespace cnet::inference::ops
