// Conv (2-D, NCHW): per sample and group, im2col then one OpenBLAS sgemm; a 1x1 convolution with stride 1
// and no padding reads its input in place. The same sample gives the same bits in any batch.
#include <cblas.h>

#include <algorithm>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check(const Node& n) {
  if (auto pad = n.attrs.find("auto_pad"); pad != n.attrs.end() && pad->second.s != "NOTSET" && pad->second.s != "VALID")
    unsupported(n, "auto_pad " + pad->second.s + " is not supported; export with explicit pads (torch.onnx.export does)");
  if (n.attr_ints("strides", {1, 1}).size() != 2 || n.attr_ints("pads", {0, 0, 0, 0}).size() != 4 || n.attr_ints("dilations", {1, 1}).size() != 2)
    unsupported(n, "only 2-D convolutions are supported (strides, pads and dilations of 2-D)");
}

struct Geometry {
  std::int64_t batch, C, H, W, M, kC, kh, kw, OH, OW, group, sh, sw, pt, pl, dh, dw;
};

Geometry geometry(const Node& n, const Tensor& x, const Tensor& w) {
  if (x.shape.size() != 4 || w.shape.size() != 4) unsupported(n, "only 2-D convolutions (4-D input and weight) are supported");
  auto s = n.attr_ints("strides", {1, 1}), p = n.attr_ints("pads", {0, 0, 0, 0}), d = n.attr_ints("dilations", {1, 1});
  Geometry g{x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[1], w.shape[2], w.shape[3], 0, 0,
             n.attr_i("group", 1), s[0], s[1], p[0], p[1], d[0], d[1]};
  for (std::int64_t v : {g.sh, g.sw, g.dh, g.dw, g.kh, g.kw, g.C, g.H, g.W, g.M, g.kC})
    if (v < 1 || v > static_cast<std::int64_t>(kMostElements)) unsupported(n, "strides, dilations and every size must be between 1 and 2^28");
  for (std::int64_t pad : p)
    if (pad < 0 || pad > static_cast<std::int64_t>(kMostElements)) unsupported(n, "padding must be between 0 and 2^28");
  if (g.group < 1 || g.C != g.kC * g.group || g.M % g.group != 0)
    unsupported(n, "input channels " + std::to_string(g.C) + " do not match the weight's " + std::to_string(g.kC) + " x group " + std::to_string(g.group));
  g.OH = (g.H + p[0] + p[2] - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.OW = (g.W + p[1] + p[3] - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (g.OH < 1 || g.OW < 1) unsupported(n, "the kernel is larger than the padded input");
  return g;
}

double flops(const Node&, Ins in, Outs out) {
  const auto& w = in[1]->shape;
  return 2.0 * static_cast<double>(out[0]->elements()) * static_cast<double>(w[1] * w[2] * w[3]);
}

void run(const Node& n, Ins in, Outs out) {
  const Tensor &x = *in[0], &w = *in[1];
  const Geometry g = geometry(n, x, w);
  const std::int64_t spatial = g.OH * g.OW, K = g.kC * g.kh * g.kw, Mg = g.M / g.group;
  Tensor& y = *out[0];
  shape_floats(y, {g.batch, g.M, g.OH, g.OW});
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.OH == g.H && g.OW == g.W;
  thread_local std::vector<float> col;
  if (!direct) col.resize(static_cast<std::size_t>(K * spatial));
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  for (std::int64_t s = 0; s < g.batch; ++s)
    for (std::int64_t grp = 0; grp < g.group; ++grp) {
      const float* image = x.f.data() + (s * g.C + grp * g.kC) * g.H * g.W;
      const float* b = image;
      if (!direct) {
        float* c = col.data();
        for (std::int64_t ch = 0; ch < g.kC; ++ch)
          for (std::int64_t i = 0; i < g.kh; ++i)
            for (std::int64_t j = 0; j < g.kw; ++j)
              for (std::int64_t oh = 0; oh < g.OH; ++oh) {
                const std::int64_t ih = oh * g.sh - g.pt + i * g.dh;
                for (std::int64_t ow = 0; ow < g.OW; ++ow) {
                  const std::int64_t iw = ow * g.sw - g.pl + j * g.dw;
                  *c++ = ih < 0 || ih >= g.H || iw < 0 || iw >= g.W ? 0.0f : image[(ch * g.H + ih) * g.W + iw];
                }
              }
        b = col.data();
      }
      float* dst = y.f.data() + (s * g.M + grp * Mg) * spatial;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(Mg), static_cast<int>(spatial), static_cast<int>(K), 1.0f,
                  w.f.data() + grp * Mg * K, static_cast<int>(K), b, static_cast<int>(spatial), 0.0f, dst, static_cast<int>(spatial));
      if (bias && !bias->f.empty())
        for (std::int64_t m = 0; m < Mg; ++m)
          std::for_each(dst + m * spatial, dst + (m + 1) * spatial, [v = bias->f[grp * Mg + m]](float& e) { e += v; });
    }
}

}  // namespace

extern const OpKernel kConv = {"Conv", check, run, flops};

}  // namespace cnet::inference::ops
