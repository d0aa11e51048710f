// Every kernel, by ONNX op type, and what kernels share.
#include <map>
#include <algorithm>
#include <cstdint>

#include "op.hpp"

namespace cnet::inference::ops {

extern const OpKernel kConv, kMaxPool, kAveragePool, kGlobalAveragePool, kRelu, kErf, kSqrt, kSigmoid, kTanh, kNeg, kAdd, kSub, kMul,
    kDiv, kPow, kEqual, kWhere, kIdentity, kFlatten, kReshape, kSqueeze, kUnsqueeze, kBatchNormalization, kGemm, kMatMul, kSoftmax,
    kLayerNormalization, kShape, kGather, kConcat, kSlice, kTranspose, kExpand, kCast, kConstantOfShape;

namespace {
const std::map<std::string, const OpKernel*>& kernels() {
  static const std::map<std::string, const OpKernel*> all = [] {
    std::map<std::string, const OpKernel*> m;
    for (const OpKernel* k : {&kConv, &kMaxPool, &kAveragePool, &kGlobalAveragePool, &kRelu, &kErf, &kSqrt, &kSigmoid, &kTanh, &kNeg, &kAdd,
                              &kSub, &kMul, &kDiv, &kPow, &kEqual, &kWhere, &kIdentity, &kFlatten, &kReshape, &kSqueeze, &kUnsqueeze,
                              &kBatchNormalization, &kGemm, &kMatMul, &kSoftmax, &kLayerNormalization, &kShape, &kGather, &kConcat, &kSlice,
                              &kTranspose, &kExpand, &kCast, &kConstantOfShape})
      m[k->name] = k;
    return m;
  }();
  return all;
}
}  // namespace

const OpKernel* find_kernel(const std::string& op) {
  auto it = kernels().find(op);
  return it == kernels().end() ? nullptr : it->second;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [name, kernel] : kernels()) out.push_back(name);
  return out;
}

std::size_t elements(std::span<const std::int64_t> shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) return SIZE_MAX;
  return static_cast<std::size_t>(n);
}

std::size_t checked_elements(std::span<const std::int64_t> shape, const std::string& what) {
  const std::size_t n = elements(shape);
  // Every partial product bounded too (an empty tensor's other axes as well): index arithmetic over
  // the shape cannot overflow.
  std::uint64_t spread = 1;
  bool bounded = n != SIZE_MAX;
  for (std::int64_t d : shape) bounded = bounded && !__builtin_mul_overflow(spread, static_cast<std::uint64_t>(std::max<std::int64_t>(d, 1)), &spread) && spread <= kMostElements;
  if (n > kMostElements || !bounded) {
    std::string text;
    for (std::int64_t d : shape) text += (text.empty() ? "" : ",") + std::to_string(d);
    throw FormatError(what + ": a tensor of shape [" + text + "] is more than cnet holds in one tensor (" + std::to_string(kMostElements) +
                      " values, 1 GiB of floats); a damaged model, or micro-batches too large (--micro-batch)");
  }
  return n;
}

void no_check(const Node&) {}
double no_flops(const Node&, Ins, Outs) { return 0; }
double output_elements(const Node&, Ins, Outs out) { return static_cast<double>(out[0]->elements()); }

void unsupported(const Node& node, const std::string& what) { throw FormatError(node.where() + ": " + what); }

std::size_t axis_of(const Node& node, std::int64_t axis, std::size_t rank) {
  const std::int64_t r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) unsupported(node, "axis " + std::to_string(axis) + " is outside a tensor of rank " + std::to_string(rank));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

const std::vector<std::int64_t>& ints_of(const Node& node, const Tensor* t, const char* what) {
  if (!t || !t->integer) unsupported(node, std::string(what) + " must be an integer tensor");
  return t->i;
}

void shape_floats(Tensor& out, std::vector<std::int64_t> shape) {
  out.integer = false;
  out.i.clear();
  out.f.resize(checked_elements(shape, "an operator's output"));
  out.shape = std::move(shape);
}

void shape_ints(Tensor& out, std::vector<std::int64_t> shape) {
  out.integer = true;
  out.f.clear();
  out.i.resize(checked_elements(shape, "an operator's output"));
  out.shape = std::move(shape);
}

}  // namespace cnet::inference::ops
