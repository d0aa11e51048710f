// Concat along one axis: ViT's class token before the patches, shape arithmetic's shape lists.
#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run(const Node& n, Ins in, Outs out) {
  const Tensor& first = *in[0];
  const std::size_t axis = axis_of(n, n.attr_i("axis", 0), first.shape.size());
  std::vector<std::int64_t> shape = first.shape;
  shape[axis] = 0;
  for (const Tensor* t : in) {
    if (t->integer != first.integer || t->shape.size() != first.shape.size()) unsupported(n, "inputs of different types or ranks");
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (d != axis && t->shape[d] != first.shape[d]) unsupported(n, "inputs differ in a dimension other than the axis");
    shape[axis] += t->shape[axis];
  }
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  Tensor& y = *out[0];
  if (first.integer) shape_ints(y, shape);
  else shape_floats(y, shape);
  std::size_t to = 0;
  for (std::int64_t o = 0; o < outer; ++o)
    for (const Tensor* t : in) {
      const std::int64_t block = t->shape[axis] * inner;
      for (std::int64_t e = 0; e < block; ++e, ++to)
        if (first.integer) y.i[to] = t->i[o * block + e];
        else y.f[to] = t->f[o * block + e];
    }
}

}  // namespace

extern const OpKernel kConcat = {"Concat", no_check, run, no_flops};

}  // namespace cnet::inference::ops
