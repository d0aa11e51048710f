#include "cnet/inference/forward.hpp"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

namespace cnet::inference {
namespace {

// y[rows x out] = x[rows x in] * W^T + b, W stored [out x in].
void linear(const float* x, std::size_t rows, std::size_t in, std::span<const float> w, std::span<const float> b, std::size_t out,
            float* y) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(out), static_cast<int>(in), 1.0f, x,
              static_cast<int>(in), w.data(), static_cast<int>(in), 0.0f, y, static_cast<int>(out));
  if (!b.empty())
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < out; ++c) y[r * out + c] += b[c];
}

void layernorm(const float* x, std::size_t rows, std::size_t n, std::span<const float> g, std::span<const float> b, float eps, float* y) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < n; ++i) mean += row[i];
    mean /= static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(n);
    float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] = (row[i] - static_cast<float>(mean)) * inv * g[i] + b[i];
  }
}

void activate(LayerKind kind, float* x, std::size_t n) {
  if (kind == LayerKind::relu) {
    for (std::size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
  } else {  // GELU, the exact (erf) form PyTorch uses by default
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
  }
}

void softmax(float* x, std::size_t rows, std::size_t n) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    float top = *std::max_element(row, row + n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += (row[i] = std::exp(row[i] - top));
    float inv = static_cast<float>(1.0 / sum);
    for (std::size_t i = 0; i < n; ++i) row[i] *= inv;
  }
}

}  // namespace

void set_blas_threads(int threads) { openblas_set_num_threads(std::max(threads, 1)); }

std::string StageForward::device() const {
  int threads = openblas_get_num_threads();
  return "CPU, OpenBLAS " + std::to_string(threads) + (threads > 1 ? " threads" : " thread");
}

StageForward::StageForward(const SafetensorsFile* f, const ModelSpec& model, std::size_t first, std::size_t last) {
  if (first >= last || last > model.layers.size()) throw FormatError("stage layer range is empty or outside the model");
  if (!f && !model.graph) throw std::logic_error("a layer list's stage needs its weights file");
  first_ = first;
  if (model.graph) {  // this stage's weights, read from the model file now; the other stages' stay there
    const auto& segments = model.graph->segments;
    load_constants_of(*model.graph, segments.at(model.layers[first].segment).first, segments.at(model.layers[last - 1].segment).last);
    graph_ = std::make_unique<GraphRunner>(model.graph);
  }
  auto bind = [&](const std::string& name) -> std::span<const float> {
    if (name.empty()) return {};
    std::vector<float> storage;
    auto s = f->floats(name, storage);
    if (storage.empty()) return s;
    converted_.push_back(std::move(storage));
    return converted_.back();
  };
  converted_.reserve(6 * (last - first));  // spans into converted_ must not move
  for (std::size_t i = first; i < last; ++i) {
    const LayerSpec& l = model.layers[i];
    // BLAS takes int dimensions: a wider layer would be truncated silently.
    if (std::max({l.in, l.out, l.hidden}) > static_cast<std::size_t>(INT_MAX))
      throw FormatError("layer " + std::to_string(i) + " (" + l.describe() + ") is wider than BLAS can address (" + std::to_string(INT_MAX) + ")");
    Bound b{l, {}, {}, {}, {}, {}, {}};
    if (l.kind == LayerKind::linear) b.w = bind(l.weight), b.b = bind(l.bias);
    if (l.kind == LayerKind::layernorm || l.kind == LayerKind::residual_mlp) b.gamma = bind(l.weight), b.beta = bind(l.bias);
    if (l.kind == LayerKind::residual_mlp)
      b.w = bind(l.fc1_weight), b.b = bind(l.fc1_bias), b.w2 = bind(l.fc2_weight), b.b2 = bind(l.fc2_bias);
    layers_.push_back(b);
  }
  // Fault the mapped weights in now, while the job is setting up, not during the first micro-batch.
  volatile float sink = 0;
  for (const Bound& l : layers_)
    for (auto span : {l.w, l.b, l.w2, l.b2, l.gamma, l.beta})
      for (std::size_t i = 0; i < span.size(); i += 1024) sink = sink + span[i];
}

void StageForward::forward(std::span<const float> in, std::size_t rows, std::vector<float>& out,
                           const std::function<void()>& between_layers) {
  std::function<void(std::size_t)> after_layer;
  if (between_layers) after_layer = [&](std::size_t) { between_layers(); };
  forward_layers(first_, end_layer(), in, rows, out, after_layer);
}

void StageForward::forward_layers(std::size_t from, std::size_t to, std::span<const float> in, std::size_t rows, std::vector<float>& out,
                                  const std::function<void(std::size_t layer)>& after_layer) {
  if (from < first_ || from >= to || to > end_layer())
    throw std::out_of_range("layers [" + std::to_string(from) + ", " + std::to_string(to) + ") are not a part of this stage's [" +
                            std::to_string(first_) + ", " + std::to_string(end_layer()) + ")");
  if (rows > static_cast<std::size_t>(INT_MAX)) throw FormatError(std::to_string(rows) + " rows in one micro-batch are more than BLAS can address");
  const std::size_t width = layers_[from - first_].spec.in;
  if (in.size() / std::max<std::size_t>(width, 1) < rows)
    throw std::invalid_argument(std::to_string(in.size()) + " input values are fewer than " + std::to_string(rows) + " rows of " +
                                std::to_string(width));
  a_.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(rows * width));
  for (std::size_t i = from; i < to; ++i) {
    const Bound& l = layers_[i - first_];
    const LayerSpec& s = l.spec;
    switch (s.kind) {
      case LayerKind::linear:
        b_.resize(rows * s.out);
        linear(a_.data(), rows, s.in, l.w, l.b, s.out, b_.data());
        a_.swap(b_);
        break;
      case LayerKind::layernorm:
        b_.resize(rows * s.in);
        layernorm(a_.data(), rows, s.in, l.gamma, l.beta, s.eps, b_.data());
        a_.swap(b_);
        break;
      case LayerKind::relu:
      case LayerKind::gelu: activate(s.kind, a_.data(), a_.size()); break;
      case LayerKind::softmax: softmax(a_.data(), rows, s.in); break;
      case LayerKind::graph_segment:
        graph_->run_segment(s.segment, a_, rows, b_);
        a_.swap(b_);
        break;
      case LayerKind::residual_mlp: {
        const float* x = a_.data();
        if (!l.gamma.empty()) {
          tmp_.resize(rows * s.in);
          layernorm(a_.data(), rows, s.in, l.gamma, l.beta, s.eps, tmp_.data());
          x = tmp_.data();
        }
        hidden_.resize(rows * s.hidden);
        linear(x, rows, s.in, l.w, l.b, s.hidden, hidden_.data());
        activate(s.activation, hidden_.data(), hidden_.size());
        b_.resize(rows * s.in);
        linear(hidden_.data(), rows, s.hidden, l.w2, l.b2, s.in, b_.data());
        for (std::size_t i = 0; i < b_.size(); ++i) a_[i] += b_[i];
        break;
      }
    }
    if (after_layer) after_layer(i);
  }
  out.swap(a_);
}

}  // namespace cnet::inference
