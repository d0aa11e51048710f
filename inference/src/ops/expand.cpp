// Expand to a shape by broadcasting (ViT's class token repeated over the batch).
#include <algorithm>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  const auto& target = ints_of(n, in[1], "the shape");
  const std::size_t rank = std::max(target.size(), x.shape.size());
  std::vector<std::int64_t> shape(rank, 1), xs(rank, 1);
  std::copy(x.shape.begin(), x.shape.end(), xs.end() - static_cast<std::ptrdiff_t>(x.shape.size()));
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t t = d + target.size() >= rank ? target[d + target.size() - rank] : 1;
    if (t != 1 && xs[d] != 1 && t != xs[d]) unsupported(n, "the shape does not broadcast with the input's");
    shape[d] = std::max(t, xs[d]);
  }
  std::vector<std::int64_t> stride(rank, 0), index(rank, 0);
  for (std::int64_t d = static_cast<std::int64_t>(rank) - 1, step = 1; d >= 0; --d) {
    if (xs[d] != 1) stride[d] = step;
    step *= xs[d];
  }
  Tensor& y = *out[0];
  if (x.integer) shape_ints(y, shape);
  else shape_floats(y, shape);
  std::int64_t from = 0;
  for (std::size_t i = 0; i < y.elements(); ++i) {
    if (x.integer) y.i[i] = x.i[from];
    else y.f[i] = x.f[from];
    for (std::size_t d = rank; d-- > 0;) {
      from += stride[d];
      if (++index[d] < shape[d]) break;
      from -= stride[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

extern const OpKernel kExpand = {"Expand", no_check, run, output_elements};

}  // namespace cnet::inference::ops
