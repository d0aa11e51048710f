// Operators that keep the data and change only the shape the graph records (Flatten, Reshape, Squeeze,
// Unsqueeze, Identity): the values are copied as they are.
#include "op.hpp"

namespace cnet::inference::ops {
namespace {

void run_copy(const Node&, std::span<const In> in, std::span<Out> out) { out[0].data->assign(in[0].data.begin(), in[0].data.end()); }

}  // namespace

extern const OpKernel kIdentity = {"Identity", no_check, no_flops, run_copy};
extern const OpKernel kFlatten = {"Flatten", no_check, no_flops, run_copy};
extern const OpKernel kReshape = {"Reshape", no_check, no_flops, run_copy};
extern const OpKernel kSqueeze = {"Squeeze", no_check, no_flops, run_copy};
extern const OpKernel kUnsqueeze = {"Unsqueeze", no_check, no_flops, run_copy};

}  // namespace cnet::inference::ops
