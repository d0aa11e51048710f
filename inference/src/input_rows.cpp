// What a job reads as its rows: a tensor file, or a folder of images decoded into the model's input.
#include <algorithm>
#include <cstdio>
#include <set>

#include "cnet/inference/progress_log.hpp"
#include "job.hpp"

namespace cnet::inference {
namespace {

InputRows open_tensor(const std::string& path, std::size_t width) {
  InputRows in;
  in.file = std::make_unique<SafetensorsFile>(path);
  std::string name = "input";
  if (!in.file->tensors().count(name)) {
    if (in.file->tensors().size() != 1)
      throw FormatError(path + ": needs a tensor named 'input' of shape [rows, " + std::to_string(width) + "]");
    name = in.file->tensors().begin()->first;
  }
  const TensorInfo& t = in.file->tensor(name);
  if (t.shape.size() != 2 || t.shape[1] != width)
    throw FormatError(path + ": tensor '" + name + "' has shape " + nlohmann::json(t.shape).dump() + ", but the model's first layer takes rows of width " +
                      std::to_string(width) + " ([rows, " + std::to_string(width) + "])");
  in.data = in.file->floats(name, in.storage);
  in.rows = t.shape[0];
  return in;
}

// A vision model takes [3, H, W] per sample: the crop must be that size.
void check_image_model(const std::string& input, const ModelSpec& model, const ImagePreprocess& p) {
  if (!model.graph)
    throw FormatError("--input " + input + " names images, but the model is a layer list taking rows of width " + std::to_string(model.input_width()) +
                      "; images need a vision model (an ONNX file whose input is [batch, 3, H, W])");
  const auto& shape = model.graph->values[model.graph->input].sample_shape;
  if (shape.size() != 3 || shape[0] != 3)
    throw FormatError("--input " + input + " names images, but the model's input is not [batch, 3, H, W] (it is " + std::to_string(shape.size() + 1) +
                      "-D): give it a tensor file instead");
  if (shape[1] != static_cast<std::int64_t>(p.crop) || shape[2] != static_cast<std::int64_t>(p.crop))
    throw FormatError("the model takes " + std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + " images, but --crop is " + std::to_string(p.crop) +
                      ": give --crop " + std::to_string(shape[1]) + (shape[1] != shape[2] ? " (a square crop cannot fill a non-square input)" : ""));
}

}  // namespace

InputRows open_input(const std::string& path, const ModelSpec& model, const InputOptions& options, bool decode) {
  if (!names_images(path)) return open_tensor(path, model.input_width());
  check_image_model(path, model, options.images);
  InputRows in;
  try {
    in.names = list_images(path);
  } catch (const ImageError& e) {
    throw FormatError(std::string("--input: ") + e.what());
  }
  if (!decode) {
    in.rows = in.names.size();
    return in;
  }
  const std::size_t width = options.images.values();
  std::vector<std::string> kept;
  in.storage.reserve(in.names.size() * width);
  for (const auto& name : in.names) {
    try {
      auto values = load_image(name, options.images);
      in.storage.insert(in.storage.end(), values.begin(), values.end());
      kept.push_back(name);
    } catch (const ImageError& e) {
      if (!options.skip_bad) throw FormatError(std::string(e.what()) + "; remove it, or pass --skip-bad-inputs to leave such files out");
      in.skipped.push_back(e.what());
    }
  }
  if (kept.empty()) throw FormatError("--input " + path + ": none of the " + std::to_string(in.names.size()) + " files is a readable image");
  in.names = std::move(kept);
  in.rows = in.names.size();
  in.data = in.storage;
  return in;
}

void drop_skipped(InputRows& input, const std::vector<std::string>& skipped) {
  std::set<std::string> bad;
  for (const auto& why : skipped)  // "PATH: why"
    for (const auto& name : input.names)
      if (why.starts_with(name + ": ")) bad.insert(name);
  std::erase_if(input.names, [&](const std::string& n) { return bad.count(n) > 0; });
  input.skipped = skipped;
  input.rows = input.names.size();
}

std::string input_identity(const InferenceOptions& o, const InputRows& input) {
  if (input.names.empty()) return file_identity(o.input);
  std::string all = o.inputs.images.describe();
  for (const auto& name : input.names) all += "\n" + name + " " + file_identity(name);
  return text_identity(all);
}

}  // namespace cnet::inference
