// Element-wise operators: unary ones on floats, binary ones (and Where) with NumPy broadcasting on floats
// or integers (shape arithmetic: Add, Sub, Mul, Div, Equal run on integer tensors too).
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

template <float (*F)(float)>
void run_unary(const Node& n, Ins in, Outs out) {
  if (in[0]->integer) unsupported(n, "needs a float tensor");
  Tensor& y = *out[0];
  shape_floats(y, in[0]->shape);
  std::transform(in[0]->f.begin(), in[0]->f.end(), y.f.begin(), F);
}

float relu(float x) { return std::max(x, 0.0f); }
float erf(float x) { return std::erf(x); }
float sqrt(float x) { return std::sqrt(x); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float tanh(float x) { return std::tanh(x); }
float neg(float x) { return -x; }

// The broadcast shape of several tensors (NumPy's rule), or an error naming the node.
std::vector<std::int64_t> broadcast(const Node& n, std::initializer_list<const Tensor*> ts) {
  std::size_t rank = 0;
  for (const Tensor* t : ts) rank = std::max(rank, t->shape.size());
  std::vector<std::int64_t> shape(rank, 1);
  for (const Tensor* t : ts)
    for (std::size_t d = 0; d < t->shape.size(); ++d) {
      std::int64_t& s = shape[rank - t->shape.size() + d];
      const std::int64_t v = t->shape[d];
      if (v != 1 && s != 1 && v != s) unsupported(n, "shapes that do not broadcast together");
      if (v != 1) s = v;
    }
  return shape;
}

// Strides of `shape` aligned right against `rank` axes, 0 where it broadcasts.
std::vector<std::int64_t> strides_in(const std::vector<std::int64_t>& shape, std::size_t rank) {
  std::vector<std::int64_t> strides(rank, 0);
  std::int64_t step = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::size_t from_right = shape.size() - 1 - d;
    if (shape[from_right] != 1) strides[rank - 1 - d] = step;
    step *= shape[from_right];
  }
  return strides;
}

// Calls f(out_index, a_index, b_index[, c_index]) over the broadcast shape, as an odometer.
template <std::size_t N, typename F>
void each(const std::vector<std::int64_t>& shape, const std::array<const Tensor*, N>& ts, F&& f) {
  const std::size_t rank = shape.size(), total = elements(shape);
  std::array<std::vector<std::int64_t>, N> st;
  std::array<std::int64_t, N> at{};
  for (std::size_t k = 0; k < N; ++k) st[k] = strides_in(ts[k]->shape, rank);
  std::vector<std::int64_t> index(rank, 0);
  for (std::size_t i = 0; i < total; ++i) {
    f(i, at);
    for (std::size_t d = rank; d-- > 0;) {
      for (std::size_t k = 0; k < N; ++k) at[k] += st[k][d];
      if (++index[d] < shape[d]) break;
      for (std::size_t k = 0; k < N; ++k) at[k] -= st[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

enum class Op { add, sub, mul, div, pow, equal };

float apply(Op op, float a, float b) {
  switch (op) {
    case Op::add: return a + b;
    case Op::sub: return a - b;
    case Op::mul: return a * b;
    case Op::div: return a / b;
    case Op::pow: return b == 2.0f ? a * a : std::pow(a, b);
    case Op::equal: return a == b;
  }
  return a;
}

// Integer arithmetic (shapes, indices) checked: a damaged model's constants must not overflow.
std::int64_t apply_int(const Node& n, Op op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  bool overflow = false;
  switch (op) {
    case Op::add: overflow = __builtin_add_overflow(a, b, &r); break;
    case Op::sub: overflow = __builtin_sub_overflow(a, b, &r); break;
    case Op::mul: overflow = __builtin_mul_overflow(a, b, &r); break;
    case Op::div:
      if (b == 0) unsupported(n, "integer division by zero");
      overflow = a == INT64_MIN && b == -1;
      r = overflow ? 0 : a / b;
      break;
    case Op::pow: unsupported(n, "integer Pow is not supported");
    case Op::equal: r = a == b; break;
  }
  if (overflow) unsupported(n, "integer overflow (" + std::to_string(a) + ", " + std::to_string(b) + ")");
  return r;
}

template <Op O>
void run_binary(const Node& n, Ins in, Outs out) {
  const Tensor &a = *in[0], &b = *in[1];
  if (a.integer != b.integer) unsupported(n, "an integer and a float operand (a Cast is missing)");
  const auto shape = broadcast(n, {&a, &b});
  // In place on the first input only where it already has the result's shape; else through a new tensor.
  Tensor fresh;
  const bool aliased = out[0] == in[0] || out[0] == in[1];
  const bool through_fresh = aliased && (out[0] != in[0] || a.shape != shape || O == Op::equal);
  Tensor& y = through_fresh ? fresh : *out[0];
  struct Finish {
    Tensor& fresh;
    Tensor* target;
    bool use;
    ~Finish() {
      if (use) std::swap(*target, fresh);
    }
  } finish{fresh, out[0], through_fresh};
  if (a.integer) {
    shape_ints(y, shape);
    each<2>(shape, {&a, &b}, [&](std::size_t i, const std::array<std::int64_t, 2>& at) { y.i[i] = apply_int(n, O, a.i[at[0]], b.i[at[1]]); });
    return;
  }
  if (O == Op::equal) {
    shape_ints(y, shape);
    each<2>(shape, {&a, &b}, [&](std::size_t i, const std::array<std::int64_t, 2>& at) { y.i[i] = a.f[at[0]] == b.f[at[1]]; });
    return;
  }
  shape_floats(y, shape);
  if (a.f.size() == y.f.size() && b.f.size() == y.f.size()) {
    if (n.attr_i("cnet.relu", 0) != 0)  // a Relu fused at load (a residual block's end)
      for (std::size_t i = 0; i < y.f.size(); ++i) y.f[i] = std::max(apply(O, a.f[i], b.f[i]), 0.0f);
    else
      for (std::size_t i = 0; i < y.f.size(); ++i) y.f[i] = apply(O, a.f[i], b.f[i]);
    return;
  }
  each<2>(shape, {&a, &b}, [&](std::size_t i, const std::array<std::int64_t, 2>& at) { y.f[i] = apply(O, a.f[at[0]], b.f[at[1]]); });
  if (n.attr_i("cnet.relu", 0) != 0)
    for (float& v : y.f) v = std::max(v, 0.0f);
}

// Where(condition, x, y): x where the condition holds, else y.
void run_where(const Node& n, Ins in, Outs out) {
  const Tensor &c = *in[0], &a = *in[1], &b = *in[2];
  if (!c.integer) unsupported(n, "the condition must be boolean");
  if (a.integer != b.integer) unsupported(n, "an integer and a float choice");
  const auto shape = broadcast(n, {&c, &a, &b});
  Tensor& y = *out[0];
  if (a.integer) shape_ints(y, shape);
  else shape_floats(y, shape);
  each<3>(shape, {&c, &a, &b}, [&](std::size_t i, const std::array<std::int64_t, 3>& at) {
    if (a.integer) y.i[i] = c.i[at[0]] ? a.i[at[1]] : b.i[at[2]];
    else y.f[i] = c.i[at[0]] ? a.f[at[1]] : b.f[at[2]];
  });
}

}  // namespace

extern const OpKernel kRelu = {"Relu", no_check, run_unary<relu>, output_elements, true};
extern const OpKernel kErf = {"Erf", no_check, run_unary<erf>, output_elements, true};
extern const OpKernel kSqrt = {"Sqrt", no_check, run_unary<sqrt>, output_elements, true};
extern const OpKernel kSigmoid = {"Sigmoid", no_check, run_unary<sigmoid>, output_elements, true};
extern const OpKernel kTanh = {"Tanh", no_check, run_unary<tanh>, output_elements, true};
extern const OpKernel kNeg = {"Neg", no_check, run_unary<neg>, output_elements, true};
extern const OpKernel kAdd = {"Add", no_check, run_binary<Op::add>, output_elements, true};
extern const OpKernel kSub = {"Sub", no_check, run_binary<Op::sub>, output_elements, true};
extern const OpKernel kMul = {"Mul", no_check, run_binary<Op::mul>, output_elements, true};
extern const OpKernel kDiv = {"Div", no_check, run_binary<Op::div>, output_elements, true};
extern const OpKernel kPow = {"Pow", no_check, run_binary<Op::pow>, output_elements, true};
extern const OpKernel kEqual = {"Equal", no_check, run_binary<Op::equal>, no_flops};
extern const OpKernel kWhere = {"Where", no_check, run_where, no_flops};

}  // namespace cnet::inference::ops
