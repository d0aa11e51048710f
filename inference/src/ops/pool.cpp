// MaxPool and AveragePool (2-D, NCHW, explicit pads, ceil_mode) and GlobalAveragePool. Averages sum in
// double in a fixed order.
#include <algorithm>
#include <limits>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check_window(const Node& n) {
  if (n.attr_ints("kernel_shape").size() != 2) unsupported(n, "only 2-D pooling is supported");
  if (auto pad = n.attrs.find("auto_pad"); pad != n.attrs.end() && pad->second.s != "NOTSET" && pad->second.s != "VALID")
    unsupported(n, "auto_pad " + pad->second.s + " is not supported; export with explicit pads");
  for (auto d : n.attr_ints("dilations", {1, 1}))
    if (d != 1) unsupported(n, "dilated pooling is not supported");
  if (n.out.size() > 1 && n.out[1] >= 0) unsupported(n, "MaxPool's Indices output is not supported");
}

double window_flops(const Node& n, Ins, Outs out) {
  auto k = n.attr_ints("kernel_shape");
  return static_cast<double>(out[0]->elements()) * static_cast<double>(k[0] * k[1]);
}

std::int64_t pooled(std::int64_t size, std::int64_t pads, std::int64_t kernel, std::int64_t stride, bool ceil) {
  const std::int64_t span = size + pads - kernel;
  return (ceil ? (span + stride - 1) / stride : span / stride) + 1;
}

template <bool Max>
void run_window(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  if (x.shape.size() != 4) unsupported(n, "only 2-D pooling of a 4-D tensor is supported");
  auto k = n.attr_ints("kernel_shape"), strides = n.attr_ints("strides", {1, 1}), pads = n.attr_ints("pads", {0, 0, 0, 0});
  constexpr auto most = static_cast<std::int64_t>(kMostElements);
  auto out_of = [&](const std::vector<std::int64_t>& v, std::int64_t low) { return std::any_of(v.begin(), v.end(), [&](std::int64_t e) { return e < low || e > most; }); };
  if (k.size() != 2 || strides.size() != 2 || pads.size() != 4 || out_of(k, 1) || out_of(strides, 1) || out_of(pads, 0))
    unsupported(n, "kernel_shape and strides must be 2 values of 1 to 2^28, pads 4 values of 0 to 2^28");
  const bool ceil = n.attr_i("ceil_mode", 0) != 0, count_pad = n.attr_i("count_include_pad", 0) != 0;
  const std::int64_t planes = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3];
  const std::int64_t OH = pooled(H, pads[0] + pads[2], k[0], strides[0], ceil), OW = pooled(W, pads[1] + pads[3], k[1], strides[1], ceil);
  Tensor& y = *out[0];
  if (OH < 1 || OW < 1) unsupported(n, "the window is larger than the padded input");
  shape_floats(y, {x.shape[0], x.shape[1], OH, OW});
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* src = x.f.data() + p * H * W;
    float* dst = y.f.data() + p * OH * OW;
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        float best = -std::numeric_limits<float>::infinity();
        double sum = 0;
        std::int64_t count = 0;
        for (std::int64_t i = 0; i < k[0]; ++i)
          for (std::int64_t j = 0; j < k[1]; ++j) {
            const std::int64_t ih = oh * strides[0] - pads[0] + i, iw = ow * strides[1] - pads[1] + j;
            const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            if (inside) {
              best = std::max(best, src[ih * W + iw]);
              sum += src[ih * W + iw];
            }
            count += inside || (count_pad && ih < H + pads[2] && iw < W + pads[3]);
          }
        dst[oh * OW + ow] = Max ? best : static_cast<float>(sum / static_cast<double>(std::max<std::int64_t>(count, 1)));
      }
  }
}

double global_flops(const Node&, Ins in, Outs) { return static_cast<double>(in[0]->elements()); }

void run_global(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  if (x.shape.size() < 3) unsupported(n, "needs a tensor of rank 3 or more (N, C, ...)");
  std::int64_t planes = x.shape[0] * x.shape[1], area = 1;
  for (std::size_t d = 2; d < x.shape.size(); ++d) area *= x.shape[d];
  std::vector<std::int64_t> shape = x.shape;
  std::fill(shape.begin() + 2, shape.end(), 1);
  Tensor& y = *out[0];
  shape_floats(y, shape);
  for (std::int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (std::int64_t i = 0; i < area; ++i) sum += x.f[p * area + i];
    y.f[p] = static_cast<float>(sum / static_cast<double>(area));
  }
}

}  // namespace

extern const OpKernel kMaxPool = {"MaxPool", check_window, run_window<true>, window_flops};
extern const OpKernel kAveragePool = {"AveragePool", check_window, run_window<false>, window_flops};
extern const OpKernel kGlobalAveragePool = {"GlobalAveragePool", no_check, run_global, global_flops};

}  // namespace cnet::inference::ops
