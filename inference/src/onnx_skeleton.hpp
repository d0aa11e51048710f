#pragma once
// An ONNX file read without its large weights: protobuf would hold every weight in memory at once, and
// a pipeline stage needs only its own. Each initializer's raw data of 4 KiB or more is skipped as the file
// is read, and the tensor gets external-data fields pointing into the model file itself (ONNX's own
// convention for weights kept outside the message): a stage reads it when it loads its weights.

#include <string>

#include <onnx/onnx_pb.h>

namespace cnet::inference {

inline constexpr std::size_t kWeightLeftInFileBytes = 4096;

// Parses `path` so; throws FormatError (naming the file) when it is not a complete ONNX message.
onnx::ModelProto parse_onnx_skeleton(const std::string& path, const std::string& damaged_hint);

}  // namespace cnet::inference
