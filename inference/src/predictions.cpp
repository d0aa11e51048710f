#include "cnet/inference/predictions.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"
#include "cnet/inference/safetensors.hpp"

namespace cnet::inference {
namespace {

namespace fs = std::filesystem;

std::string extension(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

struct Scored {
  std::size_t index;
  double score;
};

// The k best classes of one row, by softmax score; ties keep the lower index first.
std::vector<Scored> top(std::span<const float> row, std::size_t k) {
  const double peak = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - peak);
  std::vector<std::size_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, row.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::size_t a, std::size_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  std::vector<Scored> out;
  for (std::size_t i = 0; i < k; ++i) out.push_back({order[i], std::exp(static_cast<double>(row[order[i]]) - peak) / sum});
  return out;
}

}  // namespace

bool writes_predictions(const std::string& output) {
  std::string e = extension(output);
  return e == ".jsonl" || e == ".csv";
}

std::vector<std::string> read_labels(const std::string& path, std::size_t classes) {
  std::string text;
  try {
    text = common::read_file(path, 64u << 20);
  } catch (const common::FileError& e) {
    throw FormatError(std::string("--labels: ") + e.what());
  }
  std::vector<std::string> labels;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  while (!labels.empty() && common::trim(labels.back()).empty()) labels.pop_back();
  if (labels.size() != classes)
    throw FormatError("--labels " + path + ": " + std::to_string(labels.size()) + " class names, the model has " + std::to_string(classes) +
                      " outputs (one name per line, in class order)");
  return labels;
}

void write_predictions(const std::string& output, std::span<const float> logits, std::size_t classes, const std::vector<std::string>& names,
                       const PredictionOptions& o) {
  const bool csv = extension(output) == ".csv";
  const std::size_t rows = classes ? logits.size() / classes : 0;
  std::string text;
  if (csv) {
    text = names.empty() ? "row" : "file";
    for (std::size_t i = 1; i <= std::min(o.top_k, classes); ++i) {
      text += ",class_" + std::to_string(i) + ",score_" + std::to_string(i);
      if (!o.labels.empty()) text += ",label_" + std::to_string(i);
    }
    text += "\n";
  }
  for (std::size_t r = 0; r < rows; ++r) {
    auto best = top(logits.subspan(r * classes, classes), o.top_k);
    const std::string name = names.empty() ? std::to_string(r) : fs::path(names[r]).filename().string();
    if (csv) {
      text += csv_field(name);
      for (const auto& s : best) {
        std::ostringstream score;
        score.precision(6);
        score << s.score;
        text += "," + std::to_string(s.index) + "," + score.str();
        if (!o.labels.empty()) text += "," + csv_field(o.labels[s.index]);
      }
      text += "\n";
      continue;
    }
    nlohmann::ordered_json line = names.empty() ? nlohmann::ordered_json{{"row", r}} : nlohmann::ordered_json{{"file", name}};
    nlohmann::ordered_json classes_json = nlohmann::ordered_json::array(), scores = nlohmann::ordered_json::array(),
                           labels = nlohmann::ordered_json::array();
    for (const auto& s : best) {
      classes_json.push_back(s.index);
      scores.push_back(std::round(s.score * 1e6) / 1e6);
      if (!o.labels.empty()) labels.push_back(o.labels[s.index]);
    }
    line["top_k"] = classes_json;
    line["scores"] = scores;
    if (!o.labels.empty()) line["labels"] = labels;
    text += line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  }
  try {
    common::write_file_atomically(output, text);
  } catch (const common::FileError& e) {
    throw FormatError(e.what());
  }
}

}  // namespace cnet::inference
