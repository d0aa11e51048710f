// Shape arithmetic's sources: Shape (a tensor's shape as integers), ConstantOfShape, Cast.
#include <algorithm>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run_shape(const Node& n, Ins in, Outs out) {
  const auto& s = in[0]->shape;
  const auto rank = static_cast<std::int64_t>(s.size());
  auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank); };
  const std::int64_t start = clamp(n.attr_i("start", 0)), end = clamp(n.attr_i("end", rank));
  Tensor& y = *out[0];
  shape_ints(y, {std::max<std::int64_t>(end - start, 0)});
  std::copy(s.begin() + start, s.begin() + std::max(start, end), y.i.begin());
}

void run_constant_of_shape(const Node& n, Ins in, Outs out) {
  std::vector<std::int64_t> shape = ints_of(n, in[0], "the shape");
  auto it = n.attrs.find("value");
  const Tensor* value = it != n.attrs.end() ? it->second.t.get() : nullptr;
  Tensor& y = *out[0];
  if (value && value->integer) {
    shape_ints(y, shape);
    std::fill(y.i.begin(), y.i.end(), value->i.at(0));
  } else {
    shape_floats(y, shape);
    std::fill(y.f.begin(), y.f.end(), value ? value->f.at(0) : 0.0f);
  }
}

// To FLOAT (1) or an integer type (INT32 6, INT64 7, BOOL 9: integers here; BOOL as 0/1).
void check_cast(const Node& n) {
  const auto to = n.attr_i("to", 0);
  if (to != 1 && to != 6 && to != 7 && to != 9) unsupported(n, "Cast to data type " + std::to_string(to) + " is not supported (FLOAT, INT32, INT64, BOOL)");
}

void run_cast(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  const auto to = n.attr_i("to", 0);
  if (to == 1) {
    shape_floats(y, x.shape);
    if (x.integer) std::transform(x.i.begin(), x.i.end(), y.f.begin(), [](std::int64_t v) { return static_cast<float>(v); });
    else y.f = x.f;
    return;
  }
  shape_ints(y, x.shape);
  if (x.integer) y.i = x.i;
  else std::transform(x.f.begin(), x.f.end(), y.i.begin(), [](float v) { return static_cast<std::int64_t>(v); });
  if (to == 9) std::transform(y.i.begin(), y.i.end(), y.i.begin(), [](std::int64_t v) { return std::int64_t{v != 0}; });
}

}  // namespace

extern const OpKernel kShape = {"Shape", no_check, run_shape, no_flops};
extern const OpKernel kConstantOfShape = {"ConstantOfShape", no_check, run_constant_of_shape, no_flops};
extern const OpKernel kCast = {"Cast", check_cast, run_cast, no_flops};

}  // namespace cnet::inference::ops
