#include "cnet/inference/model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bounded_json.hpp"
#include "cnet/common/text.hpp"
#include "cnet/inference/onnx_model.hpp"

namespace cnet::inference {
namespace {

using common::printable;
constexpr int kMaxLayerListDepth = 8;  // {"layers": [ {layer} ]} and a layer's small arrays

using json = nlohmann::json;

std::string layer_name(LayerKind k) {
  switch (k) {
    case LayerKind::linear: return "linear";
    case LayerKind::relu: return "relu";
    case LayerKind::gelu: return "gelu";
    case LayerKind::softmax: return "softmax";
    case LayerKind::layernorm: return "layernorm";
    case LayerKind::residual_mlp: return "residual_mlp";
    case LayerKind::graph_segment: return "graph";
  }
  return "?";
}

LayerKind parse_kind(const std::string& s, const std::string& where) {
  for (auto k : {LayerKind::linear, LayerKind::relu, LayerKind::gelu, LayerKind::softmax, LayerKind::layernorm, LayerKind::residual_mlp})
    if (layer_name(k) == s) return k;
  throw FormatError(where + ": unknown layer type '" + s + "' (known: linear, relu, gelu, softmax, layernorm, residual_mlp)");
}

// Reads the layer list: the header's metadata first, then MODEL.layers.json beside the file.
json layer_list(const SafetensorsFile& f) {
  std::string text, source;
  if (auto it = f.metadata().find("cnet.layers"); it != f.metadata().end()) {
    text = it->second;
    source = f.path() + " (__metadata__ cnet.layers)";
  } else {
    std::filesystem::path side = std::filesystem::path(f.path()).replace_extension(".layers.json");
    std::ifstream in(side);
    if (!in)
      throw FormatError(f.path() + ": no layer list: put it in the header's __metadata__ as \"cnet.layers\" or in " +
                        side.string() + " (cnet-run make-model writes an example)");
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
    source = side.string();
  }
  JsonBoundBroken broken;
  json j = parse_bounded_json(text, {kMaxLayerListDepth}, broken);
  if (broken.kind == JsonBoundBroken::depth)
    throw FormatError(source + ": layer list is nested deeper than " + std::to_string(kMaxLayerListDepth) +
                      " levels: a layer list is an array of flat objects");
  if (broken.kind != JsonBoundBroken::none) throw FormatError(source + ": layer list is not valid JSON (" + printable(broken.detail, 200) + ")");
  if (j.is_object() && j.contains("layers")) j = j["layers"];
  if (!j.is_array() || j.empty()) throw FormatError(source + ": the layer list must be a non-empty JSON array");
  return j;
}

std::string text_field(const json& layer, const char* key, const std::string& where, bool required) {
  if (!layer.contains(key)) {
    if (required) throw FormatError(where + " needs \"" + key + "\" (a tensor name)");
    return "";
  }
  if (!layer[key].is_string()) throw FormatError(where + ": \"" + key + "\" must be a tensor name");
  return layer[key].get<std::string>();
}

// A weight with a zero dimension holds no bytes yet would give a layer its width from nothing.
void refuse_zero_width(const TensorInfo& t, const std::string& where) {
  for (auto d : t.shape)
    if (d == 0) throw FormatError(where + ": tensor '" + t.name + "' has a zero dimension " + nlohmann::json(t.shape).dump() + "; weights need every dimension above 0");
}

// The tensor must exist with a float dtype and exactly this shape.
void expect_shape(const SafetensorsFile& f, const std::string& name, std::vector<std::uint64_t> shape, const std::string& where) {
  auto it = f.tensors().find(name);
  if (it == f.tensors().end()) throw FormatError(where + ": tensor '" + name + "' is not in " + f.path());
  const auto& t = it->second;
  refuse_zero_width(t, where);
  if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
    throw FormatError(where + ": tensor '" + name + "' is " + t.dtype + "; weights must be F32, F16 or BF16");
  if (t.shape != shape) {
    auto dims = [](const std::vector<std::uint64_t>& s) { return json(s).dump(); };
    throw FormatError(where + ": tensor '" + name + "' has shape " + dims(t.shape) + ", expected " + dims(shape));
  }
}

// A linear layer's weight [out, in]: out is read from the tensor, in must match the running width.
std::size_t linear_out(const SafetensorsFile& f, const std::string& w, std::size_t in, const std::string& where) {
  auto it = f.tensors().find(w);
  if (it == f.tensors().end()) throw FormatError(where + ": tensor '" + w + "' is not in " + f.path());
  if (it->second.shape.size() != 2) throw FormatError(where + ": weight '" + w + "' must be 2-D [out, in], has " + json(it->second.shape).dump());
  refuse_zero_width(it->second, where);
  std::size_t out = it->second.shape[0];
  if (in != 0) expect_shape(f, w, {out, in}, where);
  return out;
}

// splitmix64: the same numbers on every machine and compiler (std:: distributions are not portable).
struct Random {
  std::uint64_t state;
  float uniform() {  // [-1, 1)
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) / static_cast<float>(1 << 23) - 1.0f;
  }
};

void fill(SafetensorsWriter& w, const TensorSpec& t, Random& rng, float scale, float offset) {
  std::uint64_t n = 1;
  for (auto d : t.shape) n *= d;
  std::vector<float> chunk;
  for (std::uint64_t at = 0; at < n; at += chunk.size()) {
    chunk.resize(std::min<std::uint64_t>(n - at, 1u << 20));
    for (auto& v : chunk) v = offset + scale * rng.uniform();
    w.write(t.name, at, chunk);
  }
}

}  // namespace

double LayerSpec::cost() const {
  switch (kind) {
    case LayerKind::linear: return 2.0 * in * out + out;
    case LayerKind::residual_mlp: return 4.0 * in * hidden + 12.0 * in + 10.0 * hidden;
    case LayerKind::layernorm: return 8.0 * in;
    case LayerKind::softmax:
    case LayerKind::gelu: return 10.0 * in;
    case LayerKind::relu: return 1.0 * in;
    case LayerKind::graph_segment: return seconds > 0 ? seconds : flops;
  }
  return 0;
}

std::string LayerSpec::describe() const {
  if (kind == LayerKind::graph_segment) return text;
  std::string s = layer_name(kind) + " " + std::to_string(in);
  if (kind == LayerKind::residual_mlp) s += "->" + std::to_string(hidden) + "->" + std::to_string(out);
  else if (in != out) s += "->" + std::to_string(out);
  return s;
}

ModelSpec load_model(const SafetensorsFile& f) {
  json list = layer_list(f);
  ModelSpec model;
  std::size_t width = 0;  // unknown until the first layer with weights
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    std::string where = f.path() + ": layer " + std::to_string(i);
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) throw FormatError(where + " needs a \"type\"");
    LayerSpec l;
    l.kind = parse_kind(j["type"].get<std::string>(), where);
    where += " (" + layer_name(l.kind) + ")";
    if (j.contains("eps")) {
      if (!j["eps"].is_number() || !(j["eps"].get<double>() > 0 && j["eps"].get<double>() <= 1)) throw FormatError(where + ": eps must be a positive number no larger than 1");
      l.eps = j["eps"].get<float>();
    }
    switch (l.kind) {
      case LayerKind::linear:
        l.weight = text_field(j, "weight", where, true);
        l.bias = text_field(j, "bias", where, false);
        l.out = linear_out(f, l.weight, width, where);
        l.in = f.tensor(l.weight).shape[1];
        if (!l.bias.empty()) expect_shape(f, l.bias, {l.out}, where);
        break;
      case LayerKind::layernorm:
        if (width == 0) throw FormatError(where + ": cannot come before the first layer with weights (its width is unknown)");
        l.in = l.out = width;
        l.weight = text_field(j, "weight", where, true);
        l.bias = text_field(j, "bias", where, true);
        expect_shape(f, l.weight, {width}, where);
        expect_shape(f, l.bias, {width}, where);
        break;
      case LayerKind::residual_mlp: {
        l.fc1_weight = text_field(j, "fc1_weight", where, true);
        l.fc2_weight = text_field(j, "fc2_weight", where, true);
        l.fc1_bias = text_field(j, "fc1_bias", where, false);
        l.fc2_bias = text_field(j, "fc2_bias", where, false);
        l.weight = text_field(j, "norm_weight", where, false);
        l.bias = text_field(j, "norm_bias", where, false);
        l.hidden = linear_out(f, l.fc1_weight, width, where);
        l.in = l.out = f.tensor(l.fc1_weight).shape[1];
        expect_shape(f, l.fc2_weight, {l.in, l.hidden}, where);
        if (!l.fc1_bias.empty()) expect_shape(f, l.fc1_bias, {l.hidden}, where);
        if (!l.fc2_bias.empty()) expect_shape(f, l.fc2_bias, {l.in}, where);
        if (l.weight.empty() != l.bias.empty()) throw FormatError(where + ": give both norm_weight and norm_bias, or neither");
        if (!l.weight.empty()) expect_shape(f, l.weight, {l.in}, where), expect_shape(f, l.bias, {l.in}, where);
        if (j.contains("activation") && !j["activation"].is_string())
          throw FormatError(where + ": activation must be gelu or relu, given as a string");
        std::string act = j.value("activation", "gelu");
        if (act != "gelu" && act != "relu") throw FormatError(where + ": activation must be gelu or relu, not '" + act + "'");
        l.activation = act == "gelu" ? LayerKind::gelu : LayerKind::relu;
        break;
      }
      case LayerKind::relu:
      case LayerKind::gelu:
      case LayerKind::softmax:
        if (width == 0) throw FormatError(where + ": cannot come before the first layer with weights (its width is unknown)");
        l.in = l.out = width;
        break;
      case LayerKind::graph_segment: break;  // parse_kind never gives it: a layer list holds no graph
    }
    width = l.out;
    model.layers.push_back(std::move(l));
  }
  return model;
}

void write_example_model(const std::string& path, const ExampleModel& m) {
  std::size_t h = m.hidden, f = m.hidden * m.expansion, o = m.outputs ? m.outputs : m.hidden;
  std::vector<TensorSpec> tensors;
  json layers = json::array();
  for (std::size_t i = 0; i < m.layers; ++i) {
    std::string p = "blocks." + std::to_string(i) + ".";
    for (auto [name, shape] : std::vector<std::pair<std::string, std::vector<std::uint64_t>>>{
             {"norm.weight", {h}}, {"norm.bias", {h}}, {"fc1.weight", {f, h}}, {"fc1.bias", {f}}, {"fc2.weight", {h, f}}, {"fc2.bias", {h}}})
      tensors.push_back({p + name, shape});
    layers.push_back({{"type", "residual_mlp"}, {"norm_weight", p + "norm.weight"}, {"norm_bias", p + "norm.bias"},
                      {"fc1_weight", p + "fc1.weight"}, {"fc1_bias", p + "fc1.bias"}, {"fc2_weight", p + "fc2.weight"},
                      {"fc2_bias", p + "fc2.bias"}, {"activation", "gelu"}});
  }
  tensors.push_back({"final_norm.weight", {h}});
  tensors.push_back({"final_norm.bias", {h}});
  tensors.push_back({"head.weight", {o, h}});
  tensors.push_back({"head.bias", {o}});
  layers.push_back({{"type", "layernorm"}, {"weight", "final_norm.weight"}, {"bias", "final_norm.bias"}});
  layers.push_back({{"type", "linear"}, {"weight", "head.weight"}, {"bias", "head.bias"}});
  for (auto& t : tensors) t.dtype = m.dtype;
  SafetensorsWriter w(path, tensors, {{"cnet.layers", layers.dump()}, {"format", "pt"}});
  Random rng{m.seed};
  for (const auto& t : tensors) {
    const std::string& n = t.name;
    bool norm = n.find("norm") != std::string::npos;
    bool weight = n.ends_with(".weight");
    float fan_in = t.shape.size() == 2 ? static_cast<float>(t.shape[1]) : 1.0f;
    if (norm) fill(w, t, rng, 0.1f, weight ? 1.0f : 0.0f);  // gamma near 1, beta near 0
    else if (weight) fill(w, t, rng, std::sqrt(3.0f / fan_in), 0.0f);  // unit-variance outputs
    else fill(w, t, rng, 0.02f, 0.0f);
  }
  w.sync();
}

void write_example_input(const std::string& path, std::size_t rows, std::size_t width, unsigned seed) {
  TensorSpec t{"input", {rows, width}};
  SafetensorsWriter w(path, {t}, {{"format", "pt"}});
  Random rng{seed * 7919ull + 17};
  fill(w, t, rng, 1.0f, 0.0f);
  w.sync();
}

ModelSpec graph_model(std::shared_ptr<Graph> graph) {
  ModelSpec m;
  for (std::size_t i = 0; i < graph->segments.size(); ++i) {
    const Segment& s = graph->segments[i];
    LayerSpec l;
    l.kind = LayerKind::graph_segment;
    l.in = graph->values[s.input].sample_elements();
    l.out = graph->values[s.output].sample_elements();
    l.segment = i;
    l.flops = s.flops;
    l.text = graph->describe_segment(i);
    m.layers.push_back(std::move(l));
  }
  m.graph = std::move(graph);
  return m;
}

std::vector<double> timed_seconds(const ModelSpec& model) {
  std::vector<double> out;
  if (model.graph)
    for (const Segment& s : model.graph->segments) out.push_back(s.seconds);
  return out;
}

void agree_on_timed_costs(ModelSpec& model, const std::vector<std::vector<double>>& per_rank) {
  if (!model.graph || per_rank.empty()) return;
  const std::size_t n = model.layers.size();
  for (std::size_t r = 0; r < per_rank.size(); ++r)
    if (per_rank[r].size() != n)
      throw FormatError("rank " + std::to_string(r) + " read a model of " + std::to_string(per_rank[r].size()) + " part(s), this rank " +
                        model.graph->source + " of " + std::to_string(n) + ": every rank must read the same model file (check --model on each node)");
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> times;
    for (const auto& rank : per_rank) times.push_back(std::isfinite(rank[i]) && rank[i] > 0 ? rank[i] : 0.0);
    std::sort(times.begin(), times.end());
    const double median = times.size() % 2 ? times[times.size() / 2] : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
    // Every layer costs more than nothing, so no layer falls back to FLOPs (another unit).
    model.layers[i].seconds = std::max(median, 1e-12);
  }
}

LoadedModel open_model(const std::string& path) {
  LoadedModel m;
  if (std::filesystem::path(path).extension() == ".onnx") {
    m.spec = graph_model(load_onnx(path));
  } else {
    m.weights = std::make_unique<SafetensorsFile>(path);
    m.spec = load_model(*m.weights);
  }
  return m;
}

}  // namespace cnet::inference
