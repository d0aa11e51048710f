// The safetensors reader on any bytes: a model or input file a user names. It must refuse what is not a
// well-formed file with FormatError, never crash, read out of bounds or allocate without bound.
#include "cnet/inference/model.hpp"
#include "cnet/inference/safetensors.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path = cnet::fuzz::as_file(data, size, "input.safetensors");
  try {
    cnet::inference::SafetensorsFile f(path);
    std::vector<float> storage;
    for (const auto& [name, t] : f.tensors())
      if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16") f.floats(name, storage);
    cnet::inference::load_model(f);
  } catch (const cnet::inference::FormatError&) {
  }
  return 0;
}
