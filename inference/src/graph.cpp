#include "cnet/inference/graph.hpp"

#include <algorithm>
#include <set>

#include "cnet/inference/safetensors.hpp"
#include "ops/op.hpp"

namespace cnet::inference {

std::size_t Value::elements() const { return ops::elements(shape); }

std::int64_t Node::attr_i(const std::string& key, std::int64_t fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.i;
}
float Node::attr_f(const std::string& key, float fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.f;
}
std::vector<std::int64_t> Node::attr_ints(const std::string& key, std::vector<std::int64_t> fallback) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? fallback : it->second.ints;
}
std::string Node::where() const { return "node '" + name + "' (" + op + ")"; }

namespace {
std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}
}  // namespace

std::string Graph::describe_segment(std::size_t i) const {
  const Segment& s = segments.at(i);
  std::vector<std::string> ops;
  for (std::size_t n = s.first; n < s.last; ++n)
    if (std::find(ops.begin(), ops.end(), nodes[n].op) == ops.end()) ops.push_back(nodes[n].op);
  std::string list;
  for (const auto& op : ops) list += (list.empty() ? "" : ",") + op;
  return "nodes " + std::to_string(s.first) + "-" + std::to_string(s.last - 1) + " (" + list + ") " + shape_text(values[s.input].shape) + "->" +
         shape_text(values[s.output].shape);
}

double node_flops(const Graph& graph, const Node& node) { return ops::find_kernel(node.op)->flops(graph, node); }

void cut_into_segments(Graph& g) {
  if (g.nodes.empty()) throw FormatError(g.source + ": the graph has no operator to run");
  std::vector<std::size_t> last_use(g.values.size(), 0);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].in)
      if (v >= 0) last_use[v] = n;
  last_use[g.output] = g.nodes.size();  // needed after the last node
  std::set<int> live{g.input};
  g.segments.clear();
  Segment current{0, 0, g.input, -1, 0};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (int v : node.out)
      if (v >= 0 && (last_use[v] > n || v == g.output)) live.insert(v);
    for (int v : node.in)
      if (v >= 0 && !g.values[v].constant && last_use[v] == n) live.erase(v);
    current.flops += node_flops(g, node);
    if (live.size() == 1 && (n + 1 == g.nodes.size() || *live.begin() != g.output)) {
      current.last = n + 1;
      current.output = *live.begin();
      g.segments.push_back(current);
      current = Segment{n + 1, 0, current.output, -1, 0};
    }
  }
  if (g.segments.empty() || g.segments.back().last != g.nodes.size())
    throw FormatError(g.source + ": the graph's last operators do not lead to its output alone");
}

GraphRunner::GraphRunner(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)), buffers_(graph_->values.size()) {}

void GraphRunner::run_segment(std::size_t index, std::span<const float> in, std::size_t rows, std::vector<float>& out) {
  const Graph& g = *graph_;
  const Segment& seg = g.segments.at(index);
  const std::int64_t batch = static_cast<std::int64_t>(rows);
  if (in.size() < rows * g.values[seg.input].elements())
    throw std::invalid_argument(std::to_string(in.size()) + " input values are fewer than " + std::to_string(rows) + " samples of " +
                                shape_text(g.values[seg.input].shape));
  // When each value is last read, within this segment: its buffer goes back to the pool then.
  std::vector<std::size_t> last_read(g.values.size(), 0);
  for (std::size_t n = seg.first; n < seg.last; ++n)
    for (int v : g.nodes[n].in)
      if (v >= 0) last_read[v] = n;
  auto batched = [&](int v) {
    std::vector<std::int64_t> s{batch};
    s.insert(s.end(), g.values[v].shape.begin(), g.values[v].shape.end());
    return s;
  };
  std::vector<ops::In> inputs;
  std::vector<ops::Out> outputs;
  for (std::size_t n = seg.first; n < seg.last; ++n) {
    const Node& node = g.nodes[n];
    inputs.clear();
    outputs.clear();
    for (int v : node.in) {
      if (v < 0) inputs.push_back({});
      else if (g.values[v].constant) inputs.push_back({g.values[v].data, g.values[v].shape, &g.values[v]});
      else if (v == seg.input) inputs.push_back({in.first(rows * g.values[v].elements()), batched(v), &g.values[v]});
      else inputs.push_back({buffers_[v], batched(v), &g.values[v]});
    }
    for (int v : node.out) {
      if (v < 0) continue;
      if (buffers_[v].capacity() == 0 && !pool_.empty()) {
        buffers_[v] = std::move(pool_.back());
        pool_.pop_back();
      }
      outputs.push_back({&buffers_[v], batched(v)});
    }
    ops::find_kernel(node.op)->run(node, inputs, outputs);
    for (int v : node.in)
      if (v >= 0 && v != seg.input && !g.values[v].constant && last_read[v] == n && v != seg.output) pool_.push_back(std::move(buffers_[v]));
  }
  out.swap(buffers_[seg.output]);
  pool_.push_back(std::move(buffers_[seg.output]));
}

}  // namespace cnet::inference
