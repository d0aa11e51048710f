#include "cnet/inference/onnx_model.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <unistd.h>

#include "cnet/common/process.hpp"
#include "cnet/common/text.hpp"
#include "cnet/inference/safetensors.hpp"
#include "onnx_skeleton.hpp"
#include "ops/op.hpp"

namespace cnet::inference {
namespace {

namespace fs = std::filesystem;
using common::printable;

constexpr const char* kExportHint = "export it with torch.onnx.export(model, example, FILE, opset_version=17, "
                                    "dynamic_axes={'input': {0: 'batch'}}) (contrib/examples/export_onnx.py)";

struct Reader {
  std::string path;
  [[noreturn]] void fail(const std::string& what) const { throw FormatError(path + ": " + what); }

  onnx::ModelProto parse() const {
    onnx::ModelProto model = parse_onnx_skeleton(path, kExportHint);
    if (!model.has_graph() || model.graph().node_size() == 0) fail("holds no graph (is it an ONNX model?); " + std::string(kExportHint));
    return model;
  }

  void check_opsets(const onnx::ModelProto& model) const {
    for (const auto& o : model.opset_import()) {
      if (!o.domain().empty() && o.domain() != "ai.onnx")
        fail("uses operators of domain '" + printable(o.domain(), 64) + "', which cnet does not run (only the standard ai.onnx operators)");
      if (o.version() < kOldestOpset || o.version() > kNewestOpset)
        fail("opset " + std::to_string(o.version()) + " is not supported (cnet runs opsets " + std::to_string(kOldestOpset) + " to " +
             std::to_string(kNewestOpset) + "); re-export with opset_version=17");
    }
  }

  // Where an initializer kept outside the message lies: in a file beside the model (tensors over 2 GB,
  // torch.onnx.export's external data) or in the model file itself (the weights parse_onnx_skeleton left
  // there). Checked now that every byte is there; std::nullopt for one held in the message.
  struct Stored {
    fs::path file;
    std::uint64_t offset = 0, length = 0;
  };
  std::optional<Stored> stored_at(const onnx::TensorProto& t) const {
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) return std::nullopt;
    std::string location;
    Stored at;
    bool has_length = false;
    const std::string what = "tensor '" + printable(t.name(), 128) + "'";
    for (const auto& kv : t.external_data()) {
      auto number = [&] {
        std::uint64_t n = 0;
        const std::string& text = kv.value();
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty())
          fail(what + " has external data with " + kv.key() + " '" + printable(text, 32) + "', not a byte count (damaged file)");
        return n;
      };
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") at.offset = number();
      if (kv.key() == "length") at.length = number(), has_length = true;
    }
    if (location.empty() || fs::path(location).is_absolute() || location.find("..") != std::string::npos)
      fail(what + " has external data without a plain file name beside the model ('" + printable(location, 128) + "')");
    at.file = fs::path(path).parent_path() / location;
    std::error_code ec;
    auto size = fs::file_size(at.file, ec);
    if (ec) fail(what + ": its external data file " + at.file.string() + " is missing; copy it beside the model (torch.onnx.export writes it there)");
    if (!has_length) at.length = size > at.offset ? size - at.offset : 0;
    if (at.offset > size || at.length > size - at.offset)
      fail(what + ": its external data file " + at.file.string() + " holds " + std::to_string(size) + " bytes, the tensor needs " +
           (at.length <= UINT64_MAX - at.offset ? std::to_string(at.offset + at.length) : std::to_string(at.offset) + "+" + std::to_string(at.length)) +
           " (truncated: copy it again)");
    return at;
  }

  // Reads a stored tensor's bytes into `into` (sized to them).
  void read_into(const Stored& at, const std::string& name, char* into) const {
    std::ifstream in(at.file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(at.offset));
    if (!in || !in.read(into, static_cast<std::streamsize>(at.length)))
      fail("tensor '" + printable(name, 128) + "': cannot read its " + std::to_string(at.length) + " bytes at " + std::to_string(at.offset) + " of " +
           at.file.string() + " (was the file replaced or truncated while the job loads?)");
  }
  std::string read(const Stored& at, const std::string& name) const {
    std::string bytes(at.length, '\0');
    read_into(at, name, bytes.data());
    return bytes;
  }

  // ONNX's checker and its type and shape inference, in a child: Debian's libonnx 1.12 divides by zero
  // on some damaged models (a Conv with a stride of 0), which must be an error, not the end of cnet-run.
  // The inferred shapes are not kept: cnet measures them by running the graph (see graph.hpp).
  void check_and_infer(const onnx::ModelProto& model) const {
    auto r = common::run_in_child(
        [&] {
          // ONNX's checker looks for external data relative to the working folder: the model's, here in the child.
          const fs::path folder = fs::path(path).parent_path();
          if (!folder.empty() && ::chdir(folder.c_str()) != 0) return "cannot enter the model's folder " + folder.string();
          try {
            onnx::checker::check_model(model);
          } catch (const std::exception& e) {
            return "fails ONNX's model checker: " + printable(e.what(), 400);
          }
          try {
            onnx::ModelProto inferred = model;
            onnx::ShapeInferenceOptions options(true, 0, false);
            onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), options);
          } catch (const std::exception& e) {
            return "ONNX's shape inference fails: " + printable(e.what(), 400);
          }
          return std::string();
        },
        std::chrono::seconds(120));
    if (r.timed_out) fail("ONNX's checker did not finish within 120 s");
    if (!r.ok()) fail("ONNX's checker crashed on it (exit " + std::to_string(r.exit_code) + "): a damaged model; re-export it");
    if (!r.output.empty()) fail(r.output);
  }
};

// A constant's values from a TensorProto: floats, or integers (INT64, INT32, BOOL) for shapes and indices.
Tensor tensor_of(const Reader& r, const onnx::TensorProto& t, const std::string& name) {
  Tensor v;
  for (auto d : t.dims()) v.shape.push_back(d);
  const std::size_t n = ops::checked_elements(v.shape, r.path + ": tensor '" + printable(name, 128) + "'");
  const std::string& raw = t.raw_data();
  const std::string what = "tensor '" + printable(name, 128) + "'";
  auto check_count = [&](std::size_t have, const char* unit) {
    if (have != n) r.fail(what + " holds " + std::to_string(have) + " " + unit + " for " + std::to_string(n) + " elements (damaged file)");
  };
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      v.f.resize(n);
      if (!raw.empty()) check_count(raw.size() / 4 * (raw.size() % 4 == 0), "floats"), std::memcpy(v.f.data(), raw.data(), raw.size());
      else check_count(static_cast<std::size_t>(t.float_data_size()), "floats"), std::copy(t.float_data().begin(), t.float_data().end(), v.f.begin());
      break;
    case onnx::TensorProto_DataType_INT64:
      v.integer = true;
      v.i.resize(n);
      if (!raw.empty()) check_count(raw.size() / 8 * (raw.size() % 8 == 0), "integers"), std::memcpy(v.i.data(), raw.data(), raw.size());
      else check_count(static_cast<std::size_t>(t.int64_data_size()), "integers"), std::copy(t.int64_data().begin(), t.int64_data().end(), v.i.begin());
      break;
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_BOOL: {
      v.integer = true;
      v.i.resize(n);
      const bool is_bool = t.data_type() == onnx::TensorProto_DataType_BOOL;
      const std::size_t width = is_bool ? 1 : 4;
      if (!raw.empty()) {
        check_count(raw.size() / width * (raw.size() % width == 0), "values");
        for (std::size_t k = 0; k < n; ++k) {
          std::int32_t x = 0;
          if (is_bool) x = raw[k] != 0;
          else std::memcpy(&x, raw.data() + 4 * k, 4);
          v.i[k] = x;
        }
      } else {
        check_count(static_cast<std::size_t>(t.int32_data_size()), "values");
        std::copy(t.int32_data().begin(), t.int32_data().end(), v.i.begin());
      }
      break;
    }
    default:
      r.fail(what + " has data type " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t.data_type())) +
             "; cnet runs FLOAT models (integers for shapes); export the model in float32");
  }
  return v;
}

struct GraphBuilder {
  const Reader& r;
  Graph& g;
  std::map<std::string, int> index;

  int add(Value v) {
    index[v.name] = static_cast<int>(g.values.size());
    g.values.push_back(std::move(v));
    return static_cast<int>(g.values.size()) - 1;
  }
  int add_constant(const std::string& name, Tensor t) {
    Value v;
    v.name = name;
    v.constant = true;
    v.data = std::move(t);
    return add(std::move(v));
  }
  // A float weight left in its file: its size checked now, its values read when a stage loads it.
  int add_stored(const onnx::TensorProto& t, const Reader::Stored& at) {
    std::vector<std::int64_t> shape(t.dims().begin(), t.dims().end());
    const std::size_t n = ops::checked_elements(shape, r.path + ": tensor '" + printable(t.name(), 128) + "'");
    if (n * 4 != at.length)
      r.fail("tensor '" + printable(t.name(), 128) + "' holds " + std::to_string(at.length) + " bytes for " + std::to_string(n) + " floats (damaged file)");
    Value v;
    v.name = t.name();
    v.constant = true;
    v.stored = true;
    v.fetch = [reader = r, shape = std::move(shape), n, at, name = t.name()] {
      static_assert(std::endian::native == std::endian::little, "ONNX stores floats little-endian");
      Tensor weight;  // read straight into place: no second copy of the bytes
      weight.shape = shape;
      weight.f.resize(n);
      reader.read_into(at, name, reinterpret_cast<char*>(weight.f.data()));
      return weight;
    };
    return add(std::move(v));
  }
  int add_computed(const std::string& name) {
    Value v;
    v.name = name;
    return add(std::move(v));
  }

  // The model's input: [batch, ...], every other dimension fixed, floats.
  std::vector<std::int64_t> sample_shape(const onnx::ValueInfoProto& v) const {
    const std::string what = "tensor '" + printable(v.name(), 128) + "' (the model's input)";
    const auto& t = v.type().tensor_type();
    if (t.elem_type() != onnx::TensorProto_DataType_FLOAT)
      r.fail(what + " is " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t.elem_type())) + ", not FLOAT: cnet runs float32 models");
    if (!t.has_shape() || t.shape().dim_size() == 0) r.fail(what + " has no shape; cnet needs [batch, ...] with the rest fixed; " + kExportHint);
    const auto& dims = t.shape().dim();
    std::vector<std::int64_t> shape;
    for (int d = 1; d < dims.size(); ++d) {
      if (!dims[d].has_dim_value() || dims[d].dim_value() <= 0)
        r.fail(what + " has a dynamic dimension " + std::to_string(d) +
               (dims[d].has_dim_param() ? " ('" + printable(dims[d].dim_param(), 64) + "')" : std::string()) +
               " other than the batch; cnet needs every other dimension fixed: export with dynamic_axes only for the batch (axis 0)");
      shape.push_back(dims[d].dim_value());
    }
    return shape;
  }
};

Attribute attribute_of(const Reader& r, const onnx::AttributeProto& a) {
  Attribute out;
  out.i = a.i();
  out.f = a.f();
  out.s = a.s();
  out.ints.assign(a.ints().begin(), a.ints().end());
  out.floats.assign(a.floats().begin(), a.floats().end());
  if (a.has_t()) out.t = std::make_shared<Tensor>(tensor_of(r, a.t(), a.name()));
  return out;
}

// A Relu right after a Conv or an Add that nothing else reads is done by that node as it writes its
// output (attribute cnet.relu), while the values are still in cache: one pass over the activations less,
// the same values.
void fuse_relus(Graph& g) {
  std::vector<int> readers(g.values.size(), 0);
  for (const auto& node : g.nodes)
    for (int v : node.in)
      if (v >= 0) ++readers[v];
  std::vector<int> made_by(g.values.size(), -1);
  std::vector<char> gone(g.nodes.size(), 0);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    Node& node = g.nodes[n];
    for (int v : node.out)
      if (v >= 0) made_by[v] = static_cast<int>(n);
    if (node.op != "Relu" || node.in.size() != 1 || node.in[0] < 0) continue;
    const int v = node.in[0], producer = made_by[v];
    if (producer < 0 || readers[v] != 1 || v == g.output) continue;
    Node& p = g.nodes[producer];
    if ((p.op != "Conv" && p.op != "Add") || p.out.size() != 1 || p.attrs.count("cnet.relu")) continue;
    p.attrs["cnet.relu"].i = 1;
    p.out[0] = node.out[0];
    made_by[node.out[0]] = producer;
    gone[n] = 1;
  }
  std::vector<Node> kept;
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    if (!gone[n]) kept.push_back(std::move(g.nodes[n]));
  g.nodes = std::move(kept);
}

}  // namespace

std::shared_ptr<Graph> load_onnx(const std::string& path) {
  Reader r{path};
  onnx::ModelProto model = r.parse();
  r.check_opsets(model);
  for (const auto& t : model.graph().initializer()) r.stored_at(t);  // our message for missing data, before the checker's
  r.check_and_infer(model);
  const onnx::GraphProto& gp = model.graph();

  auto graph = std::make_shared<Graph>();
  graph->source = path;
  GraphBuilder b{r, *graph, {}};
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (auto at = r.stored_at(t)) {
      if (t.data_type() == onnx::TensorProto_DataType_FLOAT && at->length >= kWeightLeftInFileBytes) {  // read by the stage using it
        b.add_stored(t, *at);
        continue;
      }
      t.set_raw_data(r.read(*at, t.name()));
    }
    b.add_constant(t.name(), tensor_of(r, t, t.name()));
    std::string().swap(*t.mutable_raw_data());  // one copy in memory
  }
  for (const auto& v : gp.input()) {
    if (b.index.count(v.name())) continue;  // an initializer listed as an input (older exporters)
    if (graph->input >= 0) r.fail("has more than one input ('" + printable(graph->values[graph->input].name, 64) + "', '" + printable(v.name(), 64) +
                                  "'); cnet runs models with one input tensor");
    Value in;
    in.name = v.name();
    in.batch_first = true;
    in.sample_shape = b.sample_shape(v);
    graph->input = b.add(std::move(in));
  }
  if (graph->input < 0) r.fail("has no input tensor");
  if (gp.output_size() != 1) r.fail("has " + std::to_string(gp.output_size()) + " outputs; cnet runs models with one output tensor");

  std::set<std::string> missing_ops;
  std::string first_missing;
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    Node node;
    node.op = np.op_type();
    node.name = np.name().empty() ? np.op_type() + "_" + std::to_string(i) : printable(np.name(), 128);
    for (const auto& a : np.attribute()) node.attrs[a.name()] = attribute_of(r, a);
    if (node.op == "Constant") {
      auto it = node.attrs.find("value");
      if (it == node.attrs.end() || !it->second.t || np.output_size() != 1) r.fail(node.where() + ": only Constant nodes with a tensor 'value' are supported");
      b.add_constant(np.output(0), *it->second.t);
      continue;
    }
    bool all_constant = true;
    for (const auto& name : np.input()) {
      if (name.empty()) {
        node.in.push_back(-1);
        continue;
      }
      auto it = b.index.find(name);
      if (it == b.index.end()) r.fail(node.where() + " reads '" + printable(name, 128) + "', which no node before it makes");
      node.in.push_back(it->second);
      all_constant = all_constant && graph->values[it->second].constant;
    }
    const ops::OpKernel* kernel = ops::find_kernel(node.op);
    if (!kernel) {
      if (missing_ops.insert(node.op).second && first_missing.empty()) first_missing = node.where();
      for (const auto& name : np.output()) b.add_computed(name);
      continue;
    }
    kernel->check(node);
    if (all_constant && missing_ops.empty()) {  // computed once here, at load: weights shared through Identity, shape arithmetic
      for (int v : node.in)
        if (v >= 0 && graph->values[v].stored) graph->values[v].data = graph->values[v].fetch(), graph->values[v].stored = false;
      std::vector<const Tensor*> in;
      for (int v : node.in) in.push_back(v < 0 ? nullptr : &graph->values[v].data);
      std::vector<Tensor> made(static_cast<std::size_t>(np.output_size()));
      std::vector<Tensor*> out;
      for (auto& t : made) out.push_back(&t);
      try {
        kernel->run(node, in, out);
      } catch (const FormatError& e) {
        r.fail(e.what());
      } catch (const std::exception& e) {
        r.fail(node.where() + ": " + e.what());
      }
      for (int v : node.in)
        if (v >= 0) store_constant(graph->values[v]);
      for (int o = 0; o < np.output_size(); ++o) b.add_constant(np.output(o), std::move(made[o]));
      continue;
    }
    for (const auto& name : np.output()) node.out.push_back(name.empty() ? -1 : b.add_computed(name));
    graph->nodes.push_back(std::move(node));
  }
  if (!missing_ops.empty()) {
    std::string list;
    for (const auto& op : missing_ops) list += (list.empty() ? "" : ", ") + op;
    std::string supported;
    for (const auto& op : ops::supported_ops()) supported += (supported.empty() ? "" : ", ") + op;
    r.fail("uses operators cnet does not run: " + list + " (first at " + first_missing + "); supported: " + supported);
  }
  auto out = b.index.find(gp.output(0).name());
  if (out == b.index.end() || graph->values[out->second].constant) r.fail("its output is not computed from its input");
  graph->output = out->second;
  fuse_relus(*graph);
  measure_and_cut(*graph);
  return graph;
}

}  // namespace cnet::inference
