// The ONNX loader on any bytes: a model file a user names (truncated, damaged, or made by another tool).
// It must refuse what it cannot run with FormatError, never crash, hang or allocate without bound: the
// protobuf parse, ONNX's checker and shape inference, cnet's graph building and its load-time runs.
#include "cnet/inference/model.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path = cnet::fuzz::as_file(data, size, "model.onnx");
  try {
    cnet::inference::open_model(path);
  } catch (const cnet::inference::FormatError&) {
  }
  return 0;
}
