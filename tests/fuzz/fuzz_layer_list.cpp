// The layer list of a model (MODEL.layers.json beside a fixed set of tensors): every layer checked
// against the tensors, a bad one refused with FormatError naming it.
#include "cnet/inference/model.hpp"
#include "cnet/inference/safetensors.hpp"
#include "fuzz_input.hpp"

namespace {
const std::string& model() {
  static const std::string path = [] {
    std::string p = (cnet::fuzz::scratch() / "m.safetensors").string();
    cnet::inference::SafetensorsWriter w(p, {{"w", {4, 4}}, {"b", {4}}, {"g", {4}}, {"w1", {8, 4}}, {"w2", {4, 8}}, {"z", {4, 0}}}, {});
    return p;
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& m = model();
  cnet::fuzz::as_file(data, size, "m.layers.json");
  try {
    cnet::inference::SafetensorsFile f(m);
    cnet::inference::load_model(f);
  } catch (const cnet::inference::FormatError&) {
  }
  return 0;
}
