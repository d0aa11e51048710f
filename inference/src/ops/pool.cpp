// MaxPool and AveragePool (2-D, NCHW, explicit pads; the output size the graph says, so ceil_mode holds)
// and GlobalAveragePool. Averages sum in double in a fixed order.
#include <algorithm>
#include <limits>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check_window(const Graph&, const Node& n) {
  if (n.attr_ints("kernel_shape").size() != 2) unsupported(n, "only 2-D pooling is supported");
  if (auto pad = n.attrs.find("auto_pad"); pad != n.attrs.end() && pad->second.s != "NOTSET" && pad->second.s != "VALID")
    unsupported(n, "auto_pad " + pad->second.s + " is not supported; export with explicit pads");
  for (auto d : n.attr_ints("dilations", {1, 1}))
    if (d != 1) unsupported(n, "dilated pooling is not supported");
  if (n.out.size() > 1) unsupported(n, "MaxPool's Indices output is not supported");
}

double window_flops(const Graph& g, const Node& n) {
  auto k = n.attr_ints("kernel_shape");
  return per_sample(g, n.out[0]) * static_cast<double>(k[0] * k[1]);
}

template <bool Max>
void run_window(const Node& n, std::span<const In> in, std::span<Out> out) {
  const In& x = in[0];
  const std::int64_t planes = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3], OH = out[0].shape[2], OW = out[0].shape[3];
  auto k = n.attr_ints("kernel_shape"), strides = n.attr_ints("strides", {1, 1}), pads = n.attr_ints("pads", {0, 0, 0, 0});
  const bool count_pad = n.attr_i("count_include_pad", 0) != 0;
  std::vector<float>& y = *out[0].data;
  y.resize(static_cast<std::size_t>(planes * OH * OW));
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* src = x.data.data() + p * H * W;
    float* dst = y.data() + p * OH * OW;
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

double global_flops(const Graph& g, const Node& n) { return per_sample(g, n.in[0]); }

void run_global(const Node&, std::span<const In> in, std::span<Out> out) {
  const In& x = in[0];
  std::int64_t planes = x.shape[0] * x.shape[1], area = 1;
  for (std::size_t d = 2; d < x.shape.size(); ++d) area *= x.shape[d];
  std::vector<float>& y = *out[0].data;
  y.resize(static_cast<std::size_t>(planes));
  for (std::int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (std::int64_t i = 0; i < area; ++i) sum += x.data[p * area + i];
    y[p] = static_cast<float>(sum / static_cast<double>(area));
  }
}

}  // namespace

extern const OpKernel kMaxPool = {"MaxPool", check_window, window_flops, run_window<true>};
extern const OpKernel kAveragePool = {"AveragePool", check_window, window_flops, run_window<false>};
extern const OpKernel kGlobalAveragePool = {"GlobalAveragePool", no_check, global_flops, run_global};

}  // namespace cnet::inference::ops
