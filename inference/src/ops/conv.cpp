// Conv (2-D, NCHW): per sample and group, im2col then one OpenBLAS sgemm; a 1x1 convolution with stride 1
// and no padding reads its input in place. The same sample gives the same bits in any batch.
#include <cblas.h>

#include <algorithm>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

struct ConvGeometry {
  std::int64_t group, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w;
};

ConvGeometry geometry(const Node& n) {
  auto strides = n.attr_ints("strides", {1, 1}), pads = n.attr_ints("pads", {0, 0, 0, 0}), dil = n.attr_ints("dilations", {1, 1});
  return {n.attr_i("group", 1), strides[0], strides[1], pads[0], pads[1], dil[0], dil[1]};
}

void check(const Graph& g, const Node& n) {
  if (n.in.size() < 2 || g.values[n.in[1]].shape.size() != 4) unsupported(n, "only 2-D convolutions (a 4-D weight) are supported");
  if (auto pad = n.attrs.find("auto_pad"); pad != n.attrs.end() && pad->second.s != "NOTSET" && pad->second.s != "VALID")
    unsupported(n, "auto_pad " + pad->second.s + " is not supported; export with explicit pads (torch.onnx.export does)");
  if (!g.values[n.in[1]].constant) unsupported(n, "the weight must be a constant (an initializer)");
  if (n.attr_ints("strides", {1, 1}).size() != 2 || n.attr_ints("pads", {0, 0, 0, 0}).size() != 4 || n.attr_ints("dilations", {1, 1}).size() != 2)
    unsupported(n, "strides, pads and dilations must be 2-D");
}

double flops(const Graph& g, const Node& n) {
  const auto& w = g.values[n.in[1]].shape;  // [M, C/group, kh, kw]
  return 2.0 * per_sample(g, n.out[0]) * static_cast<double>(w[1] * w[2] * w[3]);
}

void run(const Node& n, std::span<const In> in, std::span<Out> out) {
  const In &x = in[0], &w = in[1];
  const ConvGeometry geo = geometry(n);
  const std::int64_t batch = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const std::int64_t M = w.shape[0], kC = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  const std::int64_t OH = out[0].shape[2], OW = out[0].shape[3], spatial = OH * OW, K = kC * kh * kw, Mg = M / geo.group;
  std::vector<float>& y = *out[0].data;
  y.resize(static_cast<std::size_t>(batch * M * spatial));
  const bool direct = kh == 1 && kw == 1 && geo.stride_h == 1 && geo.stride_w == 1 && geo.pad_top == 0 && geo.pad_left == 0 && OH == H && OW == W;
  thread_local std::vector<float> col;
  if (!direct) col.resize(static_cast<std::size_t>(K * spatial));
  for (std::int64_t s = 0; s < batch; ++s)
    for (std::int64_t g = 0; g < geo.group; ++g) {
      const float* image = x.data.data() + (s * C + g * kC) * H * W;
      const float* b = image;
      if (!direct) {
        float* c = col.data();
        for (std::int64_t ch = 0; ch < kC; ++ch)
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j)
              for (std::int64_t oh = 0; oh < OH; ++oh) {
                const std::int64_t ih = oh * geo.stride_h - geo.pad_top + i * geo.dil_h;
                for (std::int64_t ow = 0; ow < OW; ++ow) {
                  const std::int64_t iw = ow * geo.stride_w - geo.pad_left + j * geo.dil_w;
                  *c++ = ih < 0 || ih >= H || iw < 0 || iw >= W ? 0.0f : image[(ch * H + ih) * W + iw];
                }
              }
        b = col.data();
      }
      float* dst = y.data() + (s * M + g * Mg) * spatial;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(Mg), static_cast<int>(spatial), static_cast<int>(K), 1.0f,
                  w.data.data() + g * Mg * K, static_cast<int>(K), b, static_cast<int>(spatial), 0.0f, dst, static_cast<int>(spatial));
      if (in.size() > 2 && !in[2].data.empty())
        for (std::int64_t m = 0; m < Mg; ++m)
          std::for_each(dst + m * spatial, dst + (m + 1) * spatial, [v = in[2].data[g * Mg + m]](float& e) { e += v; });
    }
}

}  // namespace

extern const OpKernel kConv = {"Conv", check, flops, run};

}  // namespace cnet::inference::ops
