#pragma once
// A classifier's output as people read it: per input (an image's file name, or a row's index) the top-k
// classes by score, with names from a labels file. Scores are the softmax of the row's logits (summed
// in double), what torchvision's examples print. JSON Lines or CSV, by the output's extension, written
// whole under a temporary name and renamed: a file by the output's name is complete.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace cnet::inference {

// Whether --output asks for predictions (.jsonl, .csv) rather than the output tensor (.safetensors).
bool writes_predictions(const std::string& output);

struct PredictionOptions {
  std::size_t top_k = 5;
  std::vector<std::string> labels;  // by class index; empty: indices only
};

// One class name per line; their count must be the model's output width. Throws FormatError naming
// the file and the counts.
std::vector<std::string> read_labels(const std::string& path, std::size_t classes);

// `logits` holds names.size() rows of `classes`; `names` are file names (or empty: rows are numbered).
void write_predictions(const std::string& output, std::span<const float> logits, std::size_t classes, const std::vector<std::string>& names,
                       const PredictionOptions& options);

}  // namespace cnet::inference
