// Element-wise operators: unary ones in place of a copy, binary ones with NumPy broadcasting (a batched
// value against a constant bias or scale, or two batched values of one shape).
#include <algorithm>
#include <cmath>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

double one_per_element(const Graph& g, const Node& n) { return per_sample(g, n.out[0]); }

template <float (*F)(float)>
void run_unary(const Node&, std::span<const In> in, std::span<Out> out) {
  std::vector<float>& y = *out[0].data;
  y.resize(in[0].data.size());
  std::transform(in[0].data.begin(), in[0].data.end(), y.begin(), F);
}

float relu(float x) { return std::max(x, 0.0f); }
float erf(float x) { return std::erf(x); }
float sqrt(float x) { return std::sqrt(x); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float tanh(float x) { return std::tanh(x); }
float neg(float x) { return -x; }

// Strides of `shape` aligned right against an output of `rank` dimensions, 0 where it broadcasts.
std::vector<std::int64_t> broadcast_strides(const std::vector<std::int64_t>& shape, std::size_t rank) {
  std::vector<std::int64_t> strides(rank, 0);
  std::int64_t step = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::size_t from_right = shape.size() - 1 - d;
    if (shape[from_right] != 1) strides[rank - 1 - d] = step;
    step *= shape[from_right];
  }
  return strides;
}

template <float (*F)(float, float)>
void run_binary(const Node&, std::span<const In> in, std::span<Out> out) {
  const auto& shape = out[0].shape;
  std::vector<float>& y = *out[0].data;
  y.resize(elements(shape));
  const float *a = in[0].data.data(), *b = in[1].data.data();
  if (in[0].data.size() == y.size() && in[1].data.size() == y.size()) {
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = F(a[i], b[i]);
    return;
  }
  const std::size_t rank = shape.size();
  auto sa = broadcast_strides(in[0].shape, rank), sb = broadcast_strides(in[1].shape, rank);
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t ia = 0, ib = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] = F(a[ia], b[ib]);
    for (std::size_t d = rank; d-- > 0;) {  // the next index, as an odometer
      ia += sa[d], ib += sb[d];
      if (++index[d] < shape[d]) break;
      ia -= sa[d] * shape[d], ib -= sb[d] * shape[d];
      index[d] = 0;
    }
  }
}

float add(float a, float b) { return a + b; }
float sub(float a, float b) { return a - b; }
float mul(float a, float b) { return a * b; }
float div(float a, float b) { return a / b; }
float pow(float a, float b) { return b == 2.0f ? a * a : std::pow(a, b); }

}  // namespace

extern const OpKernel kRelu = {"Relu", no_check, one_per_element, run_unary<relu>};
extern const OpKernel kErf = {"Erf", no_check, one_per_element, run_unary<erf>};
extern const OpKernel kSqrt = {"Sqrt", no_check, one_per_element, run_unary<sqrt>};
extern const OpKernel kSigmoid = {"Sigmoid", no_check, one_per_element, run_unary<sigmoid>};
extern const OpKernel kTanh = {"Tanh", no_check, one_per_element, run_unary<tanh>};
extern const OpKernel kNeg = {"Neg", no_check, one_per_element, run_unary<neg>};
extern const OpKernel kAdd = {"Add", no_check, one_per_element, run_binary<add>};
extern const OpKernel kSub = {"Sub", no_check, one_per_element, run_binary<sub>};
extern const OpKernel kMul = {"Mul", no_check, one_per_element, run_binary<mul>};
extern const OpKernel kDiv = {"Div", no_check, one_per_element, run_binary<div>};
extern const OpKernel kPow = {"Pow", no_check, one_per_element, run_binary<pow>};

}  // namespace cnet::inference::ops
