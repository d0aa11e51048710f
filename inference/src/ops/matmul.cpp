// Gemm and MatMul on OpenBLAS sgemm. A tensor against a constant matrix is one sgemm over all its rows;
// MatMul between two computed tensors (attention) is one sgemm per matrix of the broadcast batch.
#include <cblas.h>

#include <algorithm>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check_gemm(const Node& n) {
  if (n.attr_i("transA", 0) != 0) unsupported(n, "transA=1 is not supported");
}

double gemm_flops(const Node&, Ins in, Outs out) {
  const auto& a = in[0]->shape;
  return 2.0 * static_cast<double>(out[0]->elements()) * static_cast<double>(a.size() == 2 ? a[1] : 0);
}

void run_gemm(const Node& n, Ins in, Outs out) {
  const Tensor &a = *in[0], &b = *in[1];
  const Tensor* c = in.size() > 2 ? in[2] : nullptr;
  const bool trans_b = n.attr_i("transB", 0) != 0;
  if (a.shape.size() != 2 || b.shape.size() != 2 || a.integer || b.integer) unsupported(n, "A and B must be float matrices");
  const std::int64_t rows = a.shape[0], K = a.shape[1], N = trans_b ? b.shape[0] : b.shape[1];
  if (rows < 1 || K < 1 || N < 1) unsupported(n, "an empty matrix");
  if ((trans_b ? b.shape[1] : b.shape[0]) != K) unsupported(n, "A's columns do not match B's rows");
  const float alpha = n.attr_f("alpha", 1.0f), beta = n.attr_f("beta", 1.0f);
  Tensor& y = *out[0];
  shape_floats(y, {rows, N});
  if (c && !c->f.empty()) {  // C, broadcast: a scalar, [N], [1, N] or [rows, N]
    const auto& v = c->f;
    if (v.size() != 1 && v.size() != static_cast<std::size_t>(N) && v.size() != y.f.size()) unsupported(n, "C does not broadcast to the output");
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < N; ++j)
        y.f[r * N + j] = beta * (v.size() == 1 ? v[0] : v.size() == static_cast<std::size_t>(N) ? v[j] : v[r * N + j]);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(rows), static_cast<int>(N), static_cast<int>(K),
              alpha, a.f.data(), static_cast<int>(K), b.f.data(), static_cast<int>(trans_b ? K : N), c && !c->f.empty() ? 1.0f : 0.0f, y.f.data(),
              static_cast<int>(N));
}

double matmul_flops(const Node&, Ins in, Outs out) { return 2.0 * static_cast<double>(out[0]->elements()) * static_cast<double>(in[0]->shape.back()); }

void run_matmul(const Node& n, Ins in, Outs out) {
  const Tensor &a = *in[0], &b = *in[1];
  if (a.shape.size() < 2 || b.shape.size() < 2 || a.integer || b.integer) unsupported(n, "needs float operands of rank 2 or more");
  const std::int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  if (M < 1 || K < 1 || N < 1) unsupported(n, "an empty matrix");
  if (b.shape[b.shape.size() - 2] != K) unsupported(n, "the operands' inner dimensions differ (" + std::to_string(K) + ", " + std::to_string(b.shape[b.shape.size() - 2]) + ")");
  // The broadcast batch of matrices.
  const std::size_t lead = std::max(a.shape.size(), b.shape.size()) - 2;
  std::vector<std::int64_t> shape(lead, 1);
  for (const Tensor* t : {&a, &b})
    for (std::size_t d = 0; d + 2 < t->shape.size(); ++d) {
      std::int64_t& s = shape[lead - (t->shape.size() - 2) + d];
      if (t->shape[d] != 1 && s != 1 && s != t->shape[d]) unsupported(n, "batch dimensions that do not broadcast");
      s = std::max(s, t->shape[d]);
    }
  shape.push_back(M);
  shape.push_back(N);
  Tensor& y = *out[0];
  shape_floats(y, shape);
  if (b.shape.size() == 2) {  // every row of A against one matrix: one sgemm
    const auto rows = static_cast<std::int64_t>(a.elements()) / K;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(N), static_cast<int>(K), 1.0f, a.f.data(),
                static_cast<int>(K), b.f.data(), static_cast<int>(N), 0.0f, y.f.data(), static_cast<int>(N));
    return;
  }
  // The matrix of `t` that output matrix `m` reads: its own index where its batch axes are not 1.
  auto offset = [&](const Tensor& t, std::int64_t m) {
    const std::size_t own = t.shape.size() - 2;
    std::int64_t at = 0, stride = 1;
    for (std::size_t d = lead; d-- > 0;) {
      const std::int64_t i = m % shape[d];
      m /= shape[d];
      if (d + own >= lead) {
        const std::int64_t size = t.shape[d + own - lead];
        if (size != 1) at += i * stride;
        stride *= size;
      }
    }
    return at * t.shape[own] * t.shape[own + 1];
  };
  const std::int64_t matrices = static_cast<std::int64_t>(y.elements()) / (M * N);
  for (std::int64_t m = 0; m < matrices; ++m)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f,
                a.f.data() + offset(a, m), static_cast<int>(K), b.f.data() + offset(b, m), static_cast<int>(N), 0.0f, y.f.data() + m * M * N,
                static_cast<int>(N));
}

}  // namespace

extern const OpKernel kGemm = {"Gemm", check_gemm, run_gemm, gemm_flops};
extern const OpKernel kMatMul = {"MatMul", no_check, run_matmul, matmul_flops};

}  // namespace cnet::inference::ops
