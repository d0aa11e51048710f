#pragma once
// A model as a graph of operators (what an ONNX file holds), run on the CPU one node after another.
// Every tensor's shape is known only at run time, as the kernels compute it (the batch can sit on any
// axis inside, as attention's reshapes put it); constants (weights, what is folded at load) live in the
// graph. At load the graph runs twice on zeros, with a batch of 1 and of 2: every kernel is exercised
// before any rank computes, each node's work per sample is measured, and each tensor whose first axis is
// the batch (and whose other axes do not depend on it) is found. The graph is cut after every node where
// exactly one such tensor is live (a ResNet block's output, a ViT encoder layer's): each part is one
// layer of the model's layer list (LayerKind::graph_segment), so stages, cut swings, --verify and every
// scheme work for graphs as for layer lists.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cnet::inference {

// A tensor's values: floats, or integers (shapes, indices, booleans as 0/1).
struct Tensor {
  std::vector<std::int64_t> shape;
  bool integer = false;
  std::vector<float> f;
  std::vector<std::int64_t> i;
  std::size_t elements() const;
};

struct Attribute {
  std::int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::shared_ptr<Tensor> t;  // a tensor attribute (ConstantOfShape's value)
};

struct Value {
  std::string name;
  bool constant = false;
  Tensor data;                            // a constant's (empty while it is stored)
  // A weight left in its file until a stage that computes with it loads it (load_constants_of), so a
  // rank holds only its own stage's weights: `fetch` reads it; `stored` while it is not in `data`.
  std::function<Tensor()> fetch;
  bool stored = false;
  bool batch_first = false;               // its first axis is the batch and the others are fixed
  std::vector<std::int64_t> sample_shape;  // then: the shape of one sample
  std::size_t sample_elements() const;
};

struct Node {
  std::string op, name;
  std::vector<int> in, out;  // value indices; -1 for an omitted optional input
  std::map<std::string, Attribute> attrs;
  double flops = 0;          // per sample, measured at load (multiply-adds count 2)
  double seconds = 0;        // per sample, timed at load on this machine (the pass with a batch of 2)
  std::int64_t attr_i(const std::string& key, std::int64_t fallback) const;
  float attr_f(const std::string& key, float fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& key, std::vector<std::int64_t> fallback = {}) const;
  std::string where() const;  // "node 'conv1' (Conv)"
};

// Nodes [first, last) in the graph's order, taking value `input` and leaving value `output`.
struct Segment {
  std::size_t first = 0, last = 0;
  int input = -1, output = -1;
  double flops = 0;    // per sample
  double seconds = 0;  // per sample, timed at load on this machine
};

struct Graph {
  std::string source;           // the file, for messages
  std::vector<Value> values;
  std::vector<Node> nodes;      // in an order where every input is computed before it is used
  int input = -1, output = -1;
  std::vector<Segment> segments;  // covering nodes in order, each crossed by exactly one value
  std::string describe_segment(std::size_t i) const;  // "nodes 12-19 (Conv,Relu,Add) [64,56,56]->[64,56,56]"
};

// Runs nodes of a graph; buffers are kept between calls so a stage allocates once.
class GraphRunner {
 public:
  explicit GraphRunner(std::shared_ptr<const Graph> graph);
  // Segment `index` on `rows` samples: `in` holds rows x the segment input's sample elements; `out`
  // gets rows x the output's.
  void run_segment(std::size_t index, std::span<const float> in, std::size_t rows, std::vector<float>& out);
  // Nodes [first, last) with `input` as value `input_value`; returns value `output_value` (moved out).
  // Throws FormatError naming the node when a kernel refuses what it is given.
  Tensor run_nodes(std::size_t first, std::size_t last, int input_value, Tensor input, int output_value);
  // Called after every node with its work and its outputs (the load-time measurement); null: none.
  using NodeObserver = std::function<void(std::size_t node, double flops, std::span<Tensor* const> outputs)>;
  void on_node(NodeObserver observer) { on_node_ = std::move(observer); }
  // Called before every node (the load-time measurement brings the node's weights in); null: none.
  void before_node(std::function<void(std::size_t node)> hook) { before_node_ = std::move(hook); }

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<Tensor> tensors_;          // per value, while it is still read
  std::vector<std::size_t> last_use_;    // the last node reading each value
  std::vector<std::vector<float>> pool_; // buffers of values no longer read, for the next outputs
  std::vector<float> reuse(std::size_t elements);
  NodeObserver on_node_;
  std::function<void(std::size_t)> before_node_;
};

// Reads in the stored constants that nodes [first, last) use (a stage's own weights). Throws FormatError
// when the model file no longer holds them.
void load_constants_of(Graph& graph, std::size_t first_node, std::size_t last_node);
// Frees a constant that can be read again from its file; one that cannot (folded at load) stays.
void store_constant(Value& value);
// The bytes of the constants in memory (what this rank's stage read in, and what was folded at load).
std::uint64_t resident_constant_bytes(const Graph& graph);

// Runs the whole graph on zeros with a batch of 1 and of 2 (each stored weight in memory only while its
// node runs, so no rank ever holds the whole model), measures each node's work and times the second pass, finds the batch-first tensors, and cuts the graph into segments (fills values'
// batch_first/sample_shape, nodes' flops and seconds, and graph.segments). Throws FormatError naming the node that fails.
void measure_and_cut(Graph& graph);

}  // namespace cnet::inference
