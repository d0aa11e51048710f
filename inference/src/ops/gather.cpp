// Gather along one axis (ViT's class token, x[:, 0]; shape arithmetic's dimension picks).
#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  const auto& idx = ints_of(n, in[1], "the indices");
  const std::size_t axis = axis_of(n, n.attr_i("axis", 0), x.shape.size());
  const std::int64_t size = x.shape[axis];
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (std::size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  std::vector<std::int64_t> shape(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  shape.insert(shape.end(), in[1]->shape.begin(), in[1]->shape.end());
  shape.insert(shape.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  Tensor& y = *out[0];
  if (x.integer) shape_ints(y, shape);
  else shape_floats(y, shape);
  std::size_t to = 0;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k : idx) {
      if (k < -size || k >= size) unsupported(n, "index " + std::to_string(k) + " outside an axis of " + std::to_string(size));
      const std::int64_t from = (o * size + (k < 0 ? k + size : k)) * inner;
      for (std::int64_t e = 0; e < inner; ++e, ++to)
        if (x.integer) y.i[to] = x.i[from + e];
        else y.f[to] = x.f[from + e];
    }
}

}  // namespace

extern const OpKernel kGather = {"Gather", no_check, run, no_flops};

}  // namespace cnet::inference::ops
