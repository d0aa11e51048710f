#pragma once
// An ONNX model file (as torch.onnx.export writes it, opsets 13-17, external data beside it) read into
// cnet's operator graph, checked whole before any rank computes: parsed with ONNX's own protobuf
// classes, run through its checker and shape inference, every operator matched to a kernel, every
// shape static but the batch. Whatever is wrong is a FormatError naming the file, the node or the
// tensor, and what to do.

#include <memory>
#include <string>

#include "cnet/inference/graph.hpp"

namespace cnet::inference {

std::shared_ptr<Graph> load_onnx(const std::string& path);

// The opsets whose operators cnet's kernels follow.
constexpr long kOldestOpset = 13, kNewestOpset = 17;

}  // namespace cnet::inference
