#include "cnet/inference/onnx_model.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cnet/common/text.hpp"
#include "cnet/inference/safetensors.hpp"
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
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) fail(fs::exists(path, ec) ? "not a regular file" : "no such file");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot be read");
    google::protobuf::io::IstreamInputStream raw(&in);
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    onnx::ModelProto model;
    if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
      fail("is not a complete ONNX model (truncated or damaged); copy it again or re-export it: " + std::string(kExportHint));
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

  // Tensors over 2 GB live in files beside the model: read them in, checking that every byte is there.
  void load_external_data(onnx::ModelProto& model) const {
    for (auto& t : *model.mutable_graph()->mutable_initializer()) {
      if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
      std::string location;
      std::uint64_t offset = 0, length = 0;
      bool has_length = false;
      for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") location = kv.value();
        if (kv.key() == "offset") offset = std::stoull(kv.value());
        if (kv.key() == "length") length = std::stoull(kv.value()), has_length = true;
      }
      const std::string what = "tensor '" + printable(t.name(), 128) + "'";
      if (location.empty() || fs::path(location).is_absolute() || location.find("..") != std::string::npos)
        fail(what + " has external data without a plain file name beside the model ('" + printable(location, 128) + "')");
      fs::path file = fs::path(path).parent_path() / location;
      std::error_code ec;
      auto size = fs::file_size(file, ec);
      if (ec) fail(what + ": its external data file " + file.string() + " is missing; copy it beside the model (torch.onnx.export writes it there)");
      if (!has_length) length = size > offset ? size - offset : 0;
      if (offset + length > size)
        fail(what + ": its external data file " + file.string() + " holds " + std::to_string(size) + " bytes, the tensor needs " +
             std::to_string(offset + length) + " (truncated: copy it again)");
      std::string bytes(length, '\0');
      std::ifstream in(file, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(offset));
      if (!in.read(bytes.data(), static_cast<std::streamsize>(length))) fail(what + ": cannot read " + file.string());
      t.set_raw_data(std::move(bytes));
      t.clear_external_data();
      t.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
    }
  }

  void check_and_infer(onnx::ModelProto& model) const {
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      fail("fails ONNX's model checker: " + printable(e.what(), 400));
    }
    try {
      onnx::ShapeInferenceOptions options(true, 1, true);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      fail("ONNX's shape inference fails: " + printable(e.what(), 400));
    }
  }
};

// A constant's values from a TensorProto: floats, or integers for shapes and indices.
Value constant_value(const Reader& r, const onnx::TensorProto& t, const std::string& name) {
  Value v;
  v.name = name;
  v.constant = true;
  for (auto d : t.dims()) v.shape.push_back(d);
  const std::size_t n = ops::elements(v.shape);
  const std::string& raw = t.raw_data();
  auto need = [&](std::size_t width) {
    if (!raw.empty() && raw.size() != n * width)
      r.fail("tensor '" + printable(name, 128) + "' holds " + std::to_string(raw.size()) + " bytes for " + std::to_string(n) + " elements (damaged file)");
  };
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      need(4);
      v.data.resize(n);
      if (!raw.empty()) std::memcpy(v.data.data(), raw.data(), raw.size());
      else if (static_cast<std::size_t>(t.float_data_size()) == n) std::copy(t.float_data().begin(), t.float_data().end(), v.data.begin());
      else r.fail("tensor '" + printable(name, 128) + "' holds " + std::to_string(t.float_data_size()) + " floats for " + std::to_string(n) + " elements");
      break;
    case onnx::TensorProto_DataType_INT64:
      need(8);
      v.integer = true;
      v.ints.resize(n);
      if (!raw.empty()) std::memcpy(v.ints.data(), raw.data(), raw.size());
      else if (static_cast<std::size_t>(t.int64_data_size()) == n) std::copy(t.int64_data().begin(), t.int64_data().end(), v.ints.begin());
      else r.fail("tensor '" + printable(name, 128) + "' holds " + std::to_string(t.int64_data_size()) + " integers for " + std::to_string(n) + " elements");
      break;
    default:
      r.fail("tensor '" + printable(name, 128) + "' has data type " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t.data_type())) +
             "; cnet runs FLOAT models (INT64 for shapes); export the model in float32");
  }
  return v;
}

struct GraphBuilder {
  const Reader& r;
  Graph& g;
  std::map<std::string, int> index;
  std::map<std::string, const onnx::TypeProto*> types;

  int add(Value v) {
    index[v.name] = static_cast<int>(g.values.size());
    g.values.push_back(std::move(v));
    return static_cast<int>(g.values.size()) - 1;
  }

  // A batched value's shape without its batch dimension; every other dimension must be fixed.
  std::vector<std::int64_t> per_sample(const std::string& name, const std::string& made_by) const {
    auto it = types.find(name);
    const std::string what = "tensor '" + printable(name, 128) + "'" + made_by;
    if (it == types.end() || !it->second->has_tensor_type() || !it->second->tensor_type().has_shape())
      r.fail("ONNX's shape inference could not tell the shape of " + what + "; cnet needs every shape known at load; " + kExportHint);
    const auto& t = it->second->tensor_type();
    if (t.elem_type() != onnx::TensorProto_DataType_FLOAT)
      r.fail(what + " is " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t.elem_type())) +
             ", not FLOAT: cnet runs float32 models");
    const auto& dims = t.shape().dim();
    if (dims.empty()) r.fail(what + " is a scalar; cnet needs the batch as the first dimension");
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

  // The full shape of a value computed from constants alone (folded at load).
  std::vector<std::int64_t> whole_shape(const std::string& name) const {
    auto it = types.find(name);
    if (it == types.end() || !it->second->tensor_type().has_shape()) r.fail("the shape of constant '" + printable(name, 128) + "' is not known");
    std::vector<std::int64_t> shape;
    for (const auto& d : it->second->tensor_type().shape().dim()) shape.push_back(d.dim_value());
    return shape;
  }
};

Attribute attribute_of(const onnx::AttributeProto& a) {
  Attribute out;
  out.i = a.i();
  out.f = a.f();
  out.s = a.s();
  out.ints.assign(a.ints().begin(), a.ints().end());
  out.floats.assign(a.floats().begin(), a.floats().end());
  return out;
}

}  // namespace

std::shared_ptr<Graph> load_onnx(const std::string& path) {
  Reader r{path};
  onnx::ModelProto model = r.parse();
  r.check_opsets(model);
  r.load_external_data(model);
  r.check_and_infer(model);
  const onnx::GraphProto& gp = model.graph();

  auto graph = std::make_shared<Graph>();
  graph->source = path;
  GraphBuilder b{r, *graph, {}, {}};
  for (const auto& v : gp.input()) b.types[v.name()] = &v.type();
  for (const auto& v : gp.output()) b.types[v.name()] = &v.type();
  for (const auto& v : gp.value_info()) b.types[v.name()] = &v.type();

  for (const auto& t : gp.initializer()) b.add(constant_value(r, t, t.name()));
  for (const auto& v : gp.input()) {
    if (b.index.count(v.name())) continue;  // an initializer listed as an input (older exporters)
    if (graph->input >= 0) r.fail("has more than one input ('" + printable(graph->values[graph->input].name, 64) + "', '" + printable(v.name(), 64) +
                                  "'); cnet runs models with one input tensor");
    Value in{v.name(), b.per_sample(v.name(), " (the model's input)"), false, {}, {}, false};
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
    for (const auto& a : np.attribute()) node.attrs[a.name()] = attribute_of(a);
    if (node.op == "Constant") {
      auto it = std::find_if(np.attribute().begin(), np.attribute().end(), [](const auto& a) { return a.name() == "value"; });
      if (it == np.attribute().end() || np.output_size() != 1) r.fail(node.where() + ": only Constant nodes with a tensor 'value' are supported");
      b.add(constant_value(r, it->t(), np.output(0)));
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
      for (const auto& name : np.output()) b.add(Value{name, {}, false, {}, {}, false});
      continue;
    }
    if (all_constant) {  // computed once here, at load (weights shared through Identity, folded arithmetic)
      std::vector<ops::In> in;
      for (int v : node.in) in.push_back(v < 0 ? ops::In{} : ops::In{graph->values[v].data, graph->values[v].shape, &graph->values[v]});
      std::vector<Value> made(np.output_size());
      std::vector<ops::Out> out;
      for (int o = 0; o < np.output_size(); ++o) {
        made[o] = Value{np.output(o), b.whole_shape(np.output(o)), true, {}, {}, false};
        out.push_back({&made[o].data, made[o].shape});
      }
      for (int v : node.in)
        if (v >= 0 && graph->values[v].integer) r.fail(node.where() + ": computing with integer constants (shape arithmetic) is not supported yet");
      kernel->run(node, in, out);
      for (auto& v : made) b.add(std::move(v));
      continue;
    }
    for (const auto& name : np.output()) {
      if (name.empty()) {
        node.out.push_back(-1);
        continue;
      }
      node.out.push_back(b.add(Value{name, b.per_sample(name, " (made by " + node.where() + ")"), false, {}, {}, false}));
    }
    kernel->check(*graph, node);
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
  cut_into_segments(*graph);
  return graph;
}

}  // namespace cnet::inference
