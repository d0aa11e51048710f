#pragma once
// Small ONNX models built with ONNX's own protobuf classes, for tests of the loader and the kernels.
#include <onnx/onnx_pb.h>

#include <fstream>
#include <string>
#include <vector>

namespace cnet::inference::test {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(long opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("cnet-test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  // A float tensor value: dims of 0 are the batch ("N"); a string names a dynamic dimension.
  static void shape(onnx::ValueInfoProto* v, const std::string& name, const std::vector<long>& dims, const std::string& dynamic = "") {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    auto* s = t->mutable_shape();
    for (long d : dims) {
      auto* dim = s->add_dim();
      if (d == 0) dim->set_dim_param("N");
      else if (d < 0) dim->set_dim_param(dynamic);
      else dim->set_dim_value(d);
    }
  }
  OnnxBuilder& input(const std::string& name, const std::vector<long>& dims, const std::string& dynamic = "W") {
    shape(model_.mutable_graph()->add_input(), name, dims, dynamic);
    return *this;
  }
  OnnxBuilder& output(const std::string& name, const std::vector<long>& dims) {
    shape(model_.mutable_graph()->add_output(), name, dims);
    return *this;
  }
  onnx::TensorProto& weight(const std::string& name, const std::vector<long>& dims, const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (long d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    return *t;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  static void ints(onnx::NodeProto& n, const std::string& key, const std::vector<long>& values) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (long v : values) a->add_ints(v);
  }
  static void integer(onnx::NodeProto& n, const std::string& key, long value) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(value);
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  std::string save(const std::string& path) const {
    std::ofstream(path, std::ios::binary) << bytes();
    return path;
  }
  onnx::ModelProto& proto() { return model_; }

 private:
  onnx::ModelProto model_;
};

}  // namespace cnet::inference::test
