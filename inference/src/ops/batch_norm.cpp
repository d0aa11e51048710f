// BatchNormalization in inference form (running mean and variance, per channel of NCHW), for exports
// that did not fold it into the convolution before it.
#include <algorithm>
#include <cmath>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check(const Graph& g, const Node& n) {
  for (std::size_t i = 1; i < 5; ++i)
    if (i >= n.in.size() || n.in[i] < 0 || !g.values[n.in[i]].constant) unsupported(n, "scale, bias, mean and variance must be constants");
  if (n.attr_i("training_mode", 0) != 0) unsupported(n, "training_mode is not supported (export the model in eval mode)");
}

double flops(const Graph& g, const Node& n) { return 2 * per_sample(g, n.out[0]); }

void run(const Node& n, std::span<const In> in, std::span<Out> out) {
  const In& x = in[0];
  const float eps = n.attr_f("epsilon", 1e-5f);
  const std::int64_t batch = x.shape[0], C = x.shape[1], area = static_cast<std::int64_t>(x.data.size()) / std::max<std::int64_t>(batch * C, 1);
  std::vector<float>& y = *out[0].data;
  y.resize(x.data.size());
  for (std::int64_t c = 0; c < C; ++c) {
    const float scale = in[1].data[c] / std::sqrt(in[4].data[c] + eps), shift = in[2].data[c] - in[3].data[c] * scale;
    for (std::int64_t s = 0; s < batch; ++s)
      for (std::int64_t i = 0; i < area; ++i) y[(s * C + c) * area + i] = x.data[(s * C + c) * area + i] * scale + shift;
  }
}

}  // namespace

extern const OpKernel kBatchNormalization = {"BatchNormalization", check, flops, run};

}  // namespace cnet::inference::ops
