// Transpose by a permutation (default: reversed axes): attention's heads moved beside the batch.
#include <algorithm>
#include <numeric>

#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run(const Node& n, Ins in, Outs out) {
  const Tensor& x = *in[0];
  const std::size_t rank = x.shape.size();
  std::vector<std::int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = n.attr_ints("perm", perm);
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t d = 0; d < rank; ++d)
    if (sorted.size() != rank || sorted[d] != static_cast<std::int64_t>(d)) unsupported(n, "perm is not a permutation of the axes");
  std::vector<std::int64_t> shape(rank), in_stride(rank, 1), stride(rank);
  for (std::size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * x.shape[d];
  for (std::size_t d = 0; d < rank; ++d) shape[d] = x.shape[perm[d]], stride[d] = in_stride[perm[d]];
  Tensor& y = *out[0];
  if (x.integer) shape_ints(y, shape);
  else shape_floats(y, shape);
  if (rank == 0) return;
  // The innermost axis as a strided run, the others as an odometer.
  std::vector<std::int64_t> index(rank, 0);
  const std::int64_t last = shape[rank - 1], step = stride[rank - 1];
  std::int64_t from = 0;
  for (std::size_t to = 0; to < y.elements(); to += static_cast<std::size_t>(last)) {
    for (std::int64_t e = 0; e < last; ++e)
      if (x.integer) y.i[to + e] = x.i[from + e * step];
      else y.f[to + e] = x.f[from + e * step];
    for (std::size_t d = rank - 1; d-- > 0;) {
      from += stride[d];
      if (++index[d] < shape[d]) break;
      from -= stride[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

extern const OpKernel kTranspose = {"Transpose", no_check, run, no_flops};

}  // namespace cnet::inference::ops
