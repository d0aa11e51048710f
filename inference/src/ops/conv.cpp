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

// One sample's (and group's) patches as columns: row (channel, kernel row, kernel column), column (output
// row, output column). Each output row's run of input columns inside the image is found once, so the
// copy has no test per value (and is a plain copy at stride 1).
void im2col(const Geometry& g, const float* image, float* c) {
  for (std::int64_t ch = 0; ch < g.kC; ++ch)
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t shift = j * g.dw - g.pl;  // iw = ow * sw + shift
        // The output columns whose input column lies in [0, W).
        const std::int64_t lo = std::clamp<std::int64_t>((-shift + g.sw - 1) / g.sw, 0, g.OW);
        const std::int64_t hi = std::clamp<std::int64_t>(shift >= g.W ? 0 : (g.W - 1 - shift) / g.sw + 1, lo, g.OW);
        for (std::int64_t oh = 0; oh < g.OH; ++oh, c += g.OW) {
          const std::int64_t ih = oh * g.sh - g.pt + i * g.dh;
          if (ih < 0 || ih >= g.H) {
            std::fill(c, c + g.OW, 0.0f);
            continue;
          }
          std::fill(c, c + lo, 0.0f);
          const std::int64_t row = (ch * g.H + ih) * g.W + shift;  // + ow * sw: inside the image for lo <= ow < hi
          if (g.sw == 1) std::copy(image + row + lo, image + row + hi, c + lo);
          else
            for (std::int64_t ow = lo; ow < hi; ++ow) c[ow] = image[row + ow * g.sw];
          std::fill(c + hi, c + g.OW, 0.0f);
        }
      }
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
  const bool relu = n.attr_i("cnet.relu", 0) != 0;
  for (std::int64_t s = 0; s < g.batch; ++s)
    for (std::int64_t grp = 0; grp < g.group; ++grp) {
      const float* image = x.f.data() + (s * g.C + grp * g.kC) * g.H * g.W;
      const float* b = image;
      if (!direct) {
        im2col(g, image, col.data());
        b = col.data();
      }
      float* dst = y.f.data() + (s * g.M + grp * Mg) * spatial;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(Mg), static_cast<int>(spatial), static_cast<int>(K), 1.0f,
                  w.f.data() + grp * Mg * K, static_cast<int>(K), b, static_cast<int>(spatial), 0.0f, dst, static_cast<int>(spatial));
      // The bias, and a Relu fused at load, while the sample's output is still in cache.
      if (relu || (bias && !bias->f.empty()))
        for (std::int64_t m = 0; m < Mg; ++m) {
          const float add = bias && !bias->f.empty() ? bias->f[grp * Mg + m] : 0.0f;
          float* row = dst + m * spatial;
          if (relu) std::for_each(row, row + spatial, [add](float& e) { e = std::max(e + add, 0.0f); });
          else std::for_each(row, row + spatial, [add](float& e) { e += add; });
        }
    }
}

}  // namespace

extern const OpKernel kConv = {"Conv", check, run, flops};

}  // namespace cnet::inference::ops
