// Softmax and LayerNormalization over the last axis, per row, summing in double in a fixed order.
#include <algorithm>
#include <cmath>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void last_axis_only(const Node& n, const Tensor& x, std::int64_t fallback) {
  const std::int64_t rank = static_cast<std::int64_t>(x.shape.size()), axis = n.attr_i("axis", fallback);
  if (x.integer || rank == 0 || (axis != -1 && axis != rank - 1)) unsupported(n, "only over the last axis of a float tensor");
}

double five_per_element(const Node&, Ins, Outs out) { return 5.0 * static_cast<double>(out[0]->elements()); }

void run_softmax(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  last_axis_only(n, x, -1);
  const std::size_t width = static_cast<std::size_t>(x.shape.back()), rows = width ? x.elements() / width : 0;
  Tensor& y = *out[0];
  shape_floats(y, x.shape);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* v = x.f.data() + r * width;
    float* o = y.f.data() + r * width;
    const float top = *std::max_element(v, v + width);
    double sum = 0;
    for (std::size_t i = 0; i < width; ++i) sum += (o[i] = std::exp(v[i] - top));
    const float inv = static_cast<float>(1.0 / sum);
    for (std::size_t i = 0; i < width; ++i) o[i] *= inv;
  }
}

void run_layer_norm(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  last_axis_only(n, x, -1);
  if (n.out.size() > 1 && n.out[1] >= 0) unsupported(n, "the Mean and InvStdDev outputs are not supported");
  const std::size_t width = static_cast<std::size_t>(x.shape.back()), rows = width ? x.elements() / width : 0;
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  if (in[1]->f.size() != width || (bias && bias->f.size() != width)) unsupported(n, "scale and bias must hold one value per element of the last axis");
  const float eps = n.attr_f("epsilon", 1e-5f);
  Tensor& y = *out[0];
  shape_floats(y, x.shape);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* v = x.f.data() + r * width;
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < width; ++i) mean += v[i];
    mean /= static_cast<double>(width);
    for (std::size_t i = 0; i < width; ++i) var += (v[i] - mean) * (v[i] - mean);
    var /= static_cast<double>(width);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (std::size_t i = 0; i < width; ++i) {
      const float e = (v[i] - static_cast<float>(mean)) * inv * in[1]->f[i];
      y.f[r * width + i] = bias ? e + bias->f[i] : e;
    }
  }
}

}  // namespace

extern const OpKernel kSoftmax = {"Softmax", no_check, run_softmax, five_per_element, true};
extern const OpKernel kLayerNormalization = {"LayerNormalization", no_check, run_layer_norm, five_per_element, true};

}  // namespace cnet::inference::ops
