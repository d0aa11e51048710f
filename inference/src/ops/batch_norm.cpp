// BatchNormalization in inference form (running mean and variance, per channel of N, C, ...), for
// exports that did not fold it into the convolution before it.
#include <algorithm>
#include <cmath>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check(const Node& n) {
  if (n.attr_i("training_mode", 0) != 0) unsupported(n, "training_mode is not supported (export the model in eval mode)");
}

double flops(const Node&, Ins, Outs out) { return 2.0 * static_cast<double>(out[0]->elements()); }

void run(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  if (x.shape.size() < 2) unsupported(n, "needs a tensor of rank 2 or more (N, C, ...)");
  const float eps = n.attr_f("epsilon", 1e-5f);
  const std::int64_t batch = x.shape[0], C = x.shape[1], area = static_cast<std::int64_t>(x.elements()) / std::max<std::int64_t>(batch * C, 1);
  for (std::size_t k = 1; k < 5; ++k)
    if (!in[k] || in[k]->f.size() != static_cast<std::size_t>(C)) unsupported(n, "scale, bias, mean and variance must hold one value per channel");
  Tensor& y = *out[0];
  shape_floats(y, x.shape);
  for (std::int64_t c = 0; c < C; ++c) {
    const float scale = in[1]->f[c] / std::sqrt(in[4]->f[c] + eps), shift = in[2]->f[c] - in[3]->f[c] * scale;
    for (std::int64_t s = 0; s < batch; ++s)
      for (std::int64_t i = 0; i < area; ++i) y.f[(s * C + c) * area + i] = x.f[(s * C + c) * area + i] * scale + shift;
  }
}

}  // namespace

extern const OpKernel kBatchNormalization = {"BatchNormalization", check, run, flops, true};

}  // namespace cnet::inference::ops
