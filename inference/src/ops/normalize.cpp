// Softmax and LayerNormalization over the last axis, per row, summing in double in a fixed order.
#include <algorithm>
#include <cmath>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

bool last_axis(const Graph& g, const Node& n, std::int64_t fallback) {
  const std::int64_t rank = static_cast<std::int64_t>(g.values[n.in[0]].shape.size()) + (g.values[n.in[0]].constant ? 0 : 1);
  const std::int64_t axis = n.attr_i("axis", fallback);
  return axis == -1 || axis == rank - 1;
}

void check_softmax(const Graph& g, const Node& n) {
  if (!last_axis(g, n, -1)) unsupported(n, "Softmax over an axis other than the last is not supported");
}
void check_layer_norm(const Graph& g, const Node& n) {
  if (!last_axis(g, n, -1)) unsupported(n, "LayerNormalization over more than the last axis is not supported");
  if (n.out.size() > 1) unsupported(n, "LayerNormalization's Mean and InvStdDev outputs are not supported");
}

double five_per_element(const Graph& g, const Node& n) { return 5 * per_sample(g, n.out[0]); }

void run_softmax(const Node&, std::span<const In> in, std::span<Out> out) {
  const std::size_t width = static_cast<std::size_t>(in[0].shape.back()), rows = in[0].data.size() / width;
  std::vector<float>& y = *out[0].data;
  y.resize(in[0].data.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* x = in[0].data.data() + r * width;
    float* o = y.data() + r * width;
    const float top = *std::max_element(x, x + width);
    double sum = 0;
    for (std::size_t i = 0; i < width; ++i) sum += (o[i] = std::exp(x[i] - top));
    const float inv = static_cast<float>(1.0 / sum);
    for (std::size_t i = 0; i < width; ++i) o[i] *= inv;
  }
}

void run_layer_norm(const Node& n, std::span<const In> in, std::span<Out> out) {
  const std::size_t width = static_cast<std::size_t>(in[0].shape.back()), rows = in[0].data.size() / width;
  const float eps = n.attr_f("epsilon", 1e-5f);
  std::vector<float>& y = *out[0].data;
  y.resize(in[0].data.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* x = in[0].data.data() + r * width;
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < width; ++i) mean += x[i];
    mean /= static_cast<double>(width);
    for (std::size_t i = 0; i < width; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(width);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (std::size_t i = 0; i < width; ++i) {
      float v = (x[i] - static_cast<float>(mean)) * inv * in[1].data[i];
      y[r * width + i] = in.size() > 2 && !in[2].data.empty() ? v + in[2].data[i] : v;
    }
  }
}

}  // namespace

extern const OpKernel kSoftmax = {"Softmax", check_softmax, five_per_element, run_softmax};
extern const OpKernel kLayerNormalization = {"LayerNormalization", check_layer_norm, five_per_element, run_layer_norm};

}  // namespace cnet::inference::ops
