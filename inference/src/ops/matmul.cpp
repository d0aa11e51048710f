// Gemm and MatMul on OpenBLAS sgemm. A batched first operand against a constant matrix is one sgemm over
// all the micro-batch's rows; MatMul between batched tensors (attention) is one sgemm per matrix.
#include <cblas.h>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void check_gemm(const Graph& g, const Node& n) {
  if (n.attr_i("transA", 0) != 0) unsupported(n, "transA=1 is not supported (the rows of A are the samples)");
  if (g.values[n.in[0]].constant || g.values[n.in[0]].shape.size() != 1) unsupported(n, "A must be the batched value, one row per sample");
  if (!g.values[n.in[1]].constant || g.values[n.in[1]].shape.size() != 2) unsupported(n, "B must be a constant matrix");
  if (n.in.size() > 2 && n.in[2] >= 0 && !g.values[n.in[2]].constant) unsupported(n, "C must be a constant");
}

double gemm_flops(const Graph& g, const Node& n) { return 2.0 * per_sample(g, n.in[0]) * per_sample(g, n.out[0]); }

void run_gemm(const Node& n, std::span<const In> in, std::span<Out> out) {
  const In &a = in[0], &b = in[1];
  const bool trans_b = n.attr_i("transB", 0) != 0;
  const int rows = static_cast<int>(a.shape[0]), K = static_cast<int>(a.shape[1]), N = static_cast<int>(out[0].shape[1]);
  const float alpha = n.attr_f("alpha", 1.0f), beta = n.attr_f("beta", 1.0f);
  std::vector<float>& y = *out[0].data;
  y.assign(static_cast<std::size_t>(rows) * N, 0.0f);
  if (in.size() > 2 && !in[2].data.empty()) {  // C, broadcast over the rows: a scalar, [N] or [1, N]; or [rows, N]
    const auto& c = in[2].data;
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < N; ++j) y[static_cast<std::size_t>(r) * N + j] = beta * (c.size() == 1 ? c[0] : c.size() == static_cast<std::size_t>(N) ? c[j] : c[r * N + j]);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, rows, N, K, alpha, a.data.data(), K, b.data.data(),
              trans_b ? K : N, in.size() > 2 && !in[2].data.empty() ? 1.0f : 0.0f, y.data(), N);
}

void check_matmul(const Graph& g, const Node& n) {
  if (g.values[n.in[0]].constant) unsupported(n, "the first operand must be the batched value");
  if (g.values[n.in[1]].shape.size() < 2) unsupported(n, "a vector as the second operand is not supported");
}

double matmul_flops(const Graph& g, const Node& n) {
  const auto& a = g.values[n.in[0]].shape;
  return 2.0 * per_sample(g, n.out[0]) * static_cast<double>(a.back());
}

void run_matmul(const Node&, std::span<const In> in, std::span<Out> out) {
  const In &a = in[0], &b = in[1];
  const auto& shape = out[0].shape;
  const std::int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = shape.back();
  std::vector<float>& y = *out[0].data;
  y.resize(elements(shape));
  if (b.shape.size() == 2 && b.value && b.value->constant) {  // every row of A against one matrix
    const std::int64_t rows = static_cast<std::int64_t>(a.data.size()) / K;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(N), static_cast<int>(K), 1.0f,
                a.data.data(), static_cast<int>(K), b.data.data(), static_cast<int>(N), 0.0f, y.data(), static_cast<int>(N));
    return;
  }
  // One matrix product per leading index; an operand with fewer or size-1 leading dimensions repeats.
  const std::size_t lead = shape.size() - 2;
  const std::int64_t matrices = static_cast<std::int64_t>(elements(shape)) / (M * N);
  auto offset = [&](const In& t, std::int64_t index, std::int64_t matrix) {
    const std::size_t own = t.shape.size() - 2;
    std::int64_t at = 0, step = matrix, stride = 1;
    for (std::size_t d = lead; d-- > 0;) {
      const std::int64_t i = index % shape[d];
      index /= shape[d];
      if (d + own >= lead) {
        const std::int64_t size = t.shape[d + own - lead];
        if (size != 1) at += i * stride;
        stride *= size;
      }
    }
    return at * step;
  };
  for (std::int64_t m = 0; m < matrices; ++m)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f,
                a.data.data() + offset(a, m, M * K), static_cast<int>(K), b.data.data() + offset(b, m, K * N), static_cast<int>(N), 0.0f,
                y.data() + m * M * N, static_cast<int>(N));
}

}  // namespace

extern const OpKernel kGemm = {"Gemm", check_gemm, gemm_flops, run_gemm};
extern const OpKernel kMatMul = {"MatMul", check_matmul, matmul_flops, run_matmul};

}  // namespace cnet::inference::ops
