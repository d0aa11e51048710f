// Every kernel, by ONNX op type.
#include <algorithm>
#include <map>
#include <numeric>

#include "op.hpp"

namespace cnet::inference::ops {

extern const OpKernel kConv, kMaxPool, kAveragePool, kGlobalAveragePool, kRelu, kErf, kSqrt, kSigmoid, kTanh, kNeg, kAdd, kSub, kMul,
    kDiv, kPow, kIdentity, kFlatten, kReshape, kSqueeze, kUnsqueeze, kBatchNormalization, kGemm, kMatMul, kSoftmax, kLayerNormalization;

namespace {
const std::map<std::string, const OpKernel*>& kernels() {
  static const std::map<std::string, const OpKernel*> all = [] {
    std::map<std::string, const OpKernel*> m;
    for (const OpKernel* k : {&kConv, &kMaxPool, &kAveragePool, &kGlobalAveragePool, &kRelu, &kErf, &kSqrt, &kSigmoid, &kTanh, &kNeg, &kAdd,
                              &kSub, &kMul, &kDiv, &kPow, &kIdentity, &kFlatten, &kReshape, &kSqueeze, &kUnsqueeze, &kBatchNormalization,
                              &kGemm, &kMatMul, &kSoftmax, &kLayerNormalization})
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
  return static_cast<std::size_t>(std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>()));
}

void no_check(const Graph&, const Node&) {}
double no_flops(const Graph&, const Node&) { return 0; }

void unsupported(const Node& node, const std::string& what) { throw FormatError(node.where() + ": " + what); }

}  // namespace cnet::inference::ops
