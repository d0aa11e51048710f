#pragma once
// A model as a graph of operators (what an ONNX file holds), run on the CPU one node after another.
// Shapes are per sample: the batch is the micro-batch's row count, prepended at run time, so one graph
// serves every micro-batch size. Constants (weights, folded shape arithmetic) are held in the graph.
// The graph is cut into segments where exactly one non-constant tensor crosses (a ResNet block's
// output, a ViT encoder layer's): each segment is one layer of the model's layer list (LayerKind::
// graph_segment), so stages, cut swings, --verify and every scheme work for graphs as for layer lists.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cnet::inference {

struct Attribute {
  std::int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
};

struct Value {
  std::string name;
  std::vector<std::int64_t> shape;  // per sample (the batch dimension left out) for a batched value; whole for a constant
  bool constant = false;
  std::vector<float> data;          // a constant's floats
  std::vector<std::int64_t> ints;   // a constant's integers (shapes, indices, axes)
  bool integer = false;             // the constant is integer-typed (ints), not floats
  std::size_t elements() const;     // of one sample (batched) or of the whole constant
};

struct Node {
  std::string op, name;
  std::vector<int> in, out;  // value indices; -1 for an omitted optional input
  std::map<std::string, Attribute> attrs;
  std::int64_t attr_i(const std::string& key, std::int64_t fallback) const;
  float attr_f(const std::string& key, float fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& key, std::vector<std::int64_t> fallback = {}) const;
  std::string where() const;  // "node 'conv1' (Conv)"
};

// Nodes [first, last) in the graph's order, taking value `input` and leaving value `output`.
struct Segment {
  std::size_t first = 0, last = 0;
  int input = -1, output = -1;
  double flops = 0;  // per sample
};

struct Graph {
  std::string source;           // the file, for messages
  std::vector<Value> values;
  std::vector<Node> nodes;      // in an order where every input is computed before it is used
  int input = -1, output = -1;
  std::vector<Segment> segments;  // covering nodes in order, each crossed by exactly one value
  std::string describe_segment(std::size_t i) const;  // "nodes 12-19 (Conv, Relu, Add): [64,56,56]->[64,56,56]"
};

// Runs segments of a graph; buffers are kept between calls so a stage allocates once.
class GraphRunner {
 public:
  explicit GraphRunner(std::shared_ptr<const Graph> graph);
  // Segment `index` on `rows` samples: `in` holds rows x the segment input's elements; `out` gets
  // rows x the output's.
  void run_segment(std::size_t index, std::span<const float> in, std::size_t rows, std::vector<float>& out);

 private:
  std::shared_ptr<const Graph> graph_;
  std::vector<std::vector<float>> buffers_;  // per value
  std::vector<std::vector<float>> pool_;     // buffers of values no longer read, reused for the next outputs
};

// Cuts the graph into segments (fills graph.segments): after every node where exactly one batched value
// is live (computed and needed later, or the graph's output) there is a cut.
void cut_into_segments(Graph& graph);
// The per-sample FLOPs of one node (2 per multiply-add), for balancing stages.
double node_flops(const Graph& graph, const Node& node);

}  // namespace cnet::inference
