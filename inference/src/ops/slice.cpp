// Slice (starts, ends, axes, steps as inputs since opset 10), clamped as ONNX says.
#include <algorithm>
#include <limits>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  const std::size_t rank = x.shape.size();
  const auto& starts = ints_of(n, in[1], "starts");
  const auto& ends = ints_of(n, in[2], "ends");
  std::vector<std::int64_t> axes, steps(starts.size(), 1);
  if (in.size() > 3 && in[3]) axes = ints_of(n, in[3], "axes");
  else for (std::size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<std::int64_t>(a));
  if (in.size() > 4 && in[4]) steps = ints_of(n, in[4], "steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    unsupported(n, "starts, ends, axes and steps of different lengths");
  std::vector<std::int64_t> first(rank, 0), step(rank, 1), shape = x.shape;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t a = axis_of(n, axes[k], rank);
    const std::int64_t dim = x.shape[a], s = steps[k];
    if (s == 0 || s == std::numeric_limits<std::int64_t>::min()) unsupported(n, "a step of 0 (or of the smallest integer)");
    auto bound = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::clamp(v < 0 ? v + dim : v, lo, hi); };
    const std::int64_t b = s > 0 ? bound(starts[k], 0, dim) : bound(starts[k], -1, dim - 1);
    const std::int64_t e = s > 0 ? bound(ends[k], 0, dim) : bound(ends[k], -1, dim - 1);
    first[a] = b, step[a] = s;
    shape[a] = s > 0 ? (e > b ? (e - b - 1) / s + 1 : 0) : (b > e ? (b - e - 1) / -s + 1 : 0);
  }
  Tensor& y = *out[0];
  if (x.integer) shape_ints(y, shape);
  else shape_floats(y, shape);
  std::vector<std::int64_t> stride(rank, 1), index(rank, 0);
  for (std::size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * x.shape[d];
  const std::size_t total = y.elements();
  for (std::size_t i = 0; i < total; ++i) {
    std::int64_t from = 0;
    for (std::size_t d = 0; d < rank; ++d) from += (first[d] + index[d] * step[d]) * stride[d];
    if (x.integer) y.i[i] = x.i[from];
    else y.f[i] = x.f[from];
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

extern const OpKernel kSlice = {"Slice", no_check, run, no_flops};

}  // namespace cnet::inference::ops
