#include "cnet/inference/graph.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "cnet/inference/safetensors.hpp"
#include "ops/op.hpp"

namespace cnet::inference {

std::size_t Tensor::elements() const { return ops::elements(shape); }
std::size_t Value::sample_elements() const { return ops::elements(sample_shape); }

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

// What a load-time run saw of every value: its shape and whether it held integers.
struct Seen {
  std::vector<std::vector<std::int64_t>> shape;
  std::vector<char> integer, made;
};

}  // namespace

std::string Graph::describe_segment(std::size_t i) const {
  const Segment& s = segments.at(i);
  std::vector<std::string> ops;
  for (std::size_t n = s.first; n < s.last; ++n)
    if (std::find(ops.begin(), ops.end(), nodes[n].op) == ops.end()) ops.push_back(nodes[n].op);
  std::string list;
  for (std::size_t k = 0; k < ops.size() && k < 6; ++k) list += (list.empty() ? "" : ",") + ops[k];
  if (ops.size() > 6) list += ",...";
  return "nodes " + std::to_string(s.first) + "-" + std::to_string(s.last - 1) + " (" + list + ") " + shape_text(values[s.input].sample_shape) +
         "->" + shape_text(values[s.output].sample_shape);
}

GraphRunner::GraphRunner(std::shared_ptr<const Graph> graph)
    : graph_(std::move(graph)), tensors_(graph_->values.size()), last_use_(graph_->values.size(), 0) {
  for (std::size_t n = 0; n < graph_->nodes.size(); ++n)
    for (int v : graph_->nodes[n].in)
      if (v >= 0) last_use_[v] = n;
  if (graph_->output >= 0) last_use_[graph_->output] = graph_->nodes.size();
}

// A buffer a value no longer read left behind, for a new output of `elements` values (0: unknown): the
// smallest that holds it, so each buffer keeps serving tensors of its own size instead of every buffer
// growing to the largest tensor; none fits: a new one (the pool keeps its buffers for their sizes).
std::vector<float> GraphRunner::reuse(std::size_t elements) {
  if (pool_.empty()) return {};
  auto pick = pool_.end();
  if (elements == 0) {
    pick = pool_.end() - 1;
  } else {
    for (auto it = pool_.begin(); it != pool_.end(); ++it)
      if (it->capacity() >= elements && (pick == pool_.end() || it->capacity() < pick->capacity())) pick = it;
    if (pick == pool_.end()) return {};
  }
  std::vector<float> buffer = std::move(*pick);
  pool_.erase(pick);
  return buffer;
}

Tensor GraphRunner::run_nodes(std::size_t first, std::size_t last, int input_value, Tensor input, int output_value) {
  const Graph& g = *graph_;
  const std::size_t rows = input.shape.empty() ? 0 : static_cast<std::size_t>(input.shape[0]);
  tensors_[input_value] = std::move(input);
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  for (std::size_t n = first; n < last; ++n) {
    const Node& node = g.nodes[n];
    in.clear();
    out.clear();
    if (before_node_) before_node_(n);
    for (int v : node.in) {
      if (v >= 0 && g.values[v].stored)
        throw std::logic_error(node.where() + ": its weight '" + g.values[v].name + "' is not loaded (load_constants_of for its stage)");
      in.push_back(v < 0 ? nullptr : g.values[v].constant ? &g.values[v].data : &tensors_[v]);
    }
    const ops::OpKernel* kernel = ops::find_kernel(node.op);
    // In place: the first input's buffer becomes the output when nothing reads that input afterwards.
    const int first = node.in.empty() ? -1 : node.in[0];
    const bool in_place = kernel->in_place && first >= 0 && !g.values[first].constant && first != output_value && last_use_[first] == n &&
                          !node.out.empty() && node.out[0] >= 0 && std::count(node.in.begin(), node.in.end(), first) == 1;
    if (in_place) {
      tensors_[node.out[0]] = std::move(tensors_[first]);
      tensors_[first] = Tensor{};
      in[0] = &tensors_[node.out[0]];
    }
    for (int v : node.out) {
      if (v < 0) continue;
      Tensor& t = tensors_[v];
      if (t.f.capacity() == 0) t.f = reuse(g.values[v].batch_first && rows ? rows * g.values[v].sample_elements() : 0);
      out.push_back(&t);
    }
    try {
      kernel->run(node, in, out);
    } catch (const FormatError&) {
      throw;
    } catch (const std::exception& e) {
      throw FormatError(node.where() + ": " + e.what());
    }
    if (on_node_) on_node_(n, kernel->flops(node, in, out), out);
    for (int v : node.in)
      if (v >= 0 && !g.values[v].constant && v != output_value && last_use_[v] <= n && !(in_place && v == first)) {
        pool_.push_back(std::move(tensors_[v].f));
        tensors_[v] = Tensor{};
      }
  }
  Tensor result = std::move(tensors_[output_value]);
  tensors_[output_value] = Tensor{};
  return result;
}

void GraphRunner::run_segment(std::size_t index, std::span<const float> in, std::size_t rows, std::vector<float>& out) {
  const Graph& g = *graph_;
  const Segment& seg = g.segments.at(index);
  const Value &from = g.values[seg.input], &to = g.values[seg.output];
  if (in.size() < rows * from.sample_elements())
    throw std::invalid_argument(std::to_string(in.size()) + " input values are fewer than " + std::to_string(rows) + " samples of " +
                                shape_text(from.sample_shape));
  Tensor x;
  x.shape = {static_cast<std::int64_t>(rows)};
  x.shape.insert(x.shape.end(), from.sample_shape.begin(), from.sample_shape.end());
  x.f = reuse(rows * from.sample_elements());
  x.f.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(rows * from.sample_elements()));
  Tensor y = run_nodes(seg.first, seg.last, seg.input, std::move(x), seg.output);
  if (y.integer || y.shape.empty() || y.shape[0] != static_cast<std::int64_t>(rows) || y.elements() != rows * to.sample_elements())
    throw FormatError(g.source + ": " + to.name + " came out as " + shape_text(y.shape) + " for " + std::to_string(rows) + " samples, not [" +
                      std::to_string(rows) + "]+" + shape_text(to.sample_shape));
  pool_.push_back(std::move(out));
  out = std::move(y.f);
}

void load_constants_of(Graph& g, std::size_t first, std::size_t last) {
  for (std::size_t n = first; n < last && n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].in)
      if (v >= 0 && g.values[v].stored) {
        g.values[v].data = g.values[v].fetch();
        g.values[v].stored = false;
      }
}

void store_constant(Value& value) {
  if (!value.constant || !value.fetch || value.stored) return;
  value.data = Tensor{};
  value.stored = true;
}

std::uint64_t resident_constant_bytes(const Graph& g) {
  std::uint64_t bytes = 0;
  for (const Value& v : g.values)
    if (v.constant) bytes += v.data.f.size() * sizeof(float) + v.data.i.size() * sizeof(std::int64_t);
  return bytes;
}

void measure_and_cut(Graph& g) {
  if (g.nodes.empty()) throw FormatError(g.source + ": the graph has no operator to run");
  GraphRunner runner(std::shared_ptr<const Graph>(&g, [](const Graph*) {}));
  Seen seen[2];
  std::vector<double> flops(g.nodes.size(), 0), seconds(g.nodes.size(), 0);
  std::vector<std::size_t> last_read(g.values.size(), 0);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].in)
      if (v >= 0) last_read[v] = n;
  // FLOPs alone misjudge stages: early convolutions and memory-bound operators run slower per FLOP.
  // The second pass (its buffers already touched by the first) is timed node by node.
  auto since = std::chrono::steady_clock::now();
  for (int b = 0; b < 2; ++b) {
    Seen& s = seen[b];
    s.shape.assign(g.values.size(), {});
    s.integer.assign(g.values.size(), 0);
    s.made.assign(g.values.size(), 0);
    runner.before_node([&](std::size_t n) {
      load_constants_of(g, n, n + 1);
      since = std::chrono::steady_clock::now();
    });
    runner.on_node([&](std::size_t n, double node_flops, std::span<Tensor* const> out) {
      if (b == 0) flops[n] = node_flops;
      const auto now = std::chrono::steady_clock::now();
      if (b == 1) seconds[n] = std::chrono::duration<double>(now - since).count() / 2;
      std::size_t k = 0;
      for (int v : g.nodes[n].out)
        if (v >= 0) s.shape[v] = out[k]->shape, s.integer[v] = out[k]->integer, s.made[v] = 1, ++k;
      for (int v : g.nodes[n].in)
        if (v >= 0 && last_read[v] == n) store_constant(g.values[v]);
    });
    Tensor zeros;
    zeros.shape = {b + 1};
    zeros.shape.insert(zeros.shape.end(), g.values[g.input].sample_shape.begin(), g.values[g.input].sample_shape.end());
    zeros.f.assign(ops::checked_elements(zeros.shape, g.source + ": the input"), 0.0f);
    since = std::chrono::steady_clock::now();
    runner.run_nodes(0, g.nodes.size(), g.input, std::move(zeros), g.output);
  }
  runner.on_node(nullptr);
  runner.before_node(nullptr);
  // A batch-first value: floats, [1, ...] with a batch of 1 and [2, ...] (the same rest) with 2.
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    Value& value = g.values[v];
    if (value.constant || static_cast<int>(v) == g.input) continue;
    const auto &one = seen[0].shape[v], &two = seen[1].shape[v];
    value.batch_first = seen[0].made[v] && !seen[0].integer[v] && !one.empty() && one.size() == two.size() && one[0] == 1 && two[0] == 2 &&
                        std::equal(one.begin() + 1, one.end(), two.begin() + 1);
    if (value.batch_first) value.sample_shape.assign(one.begin() + 1, one.end());
  }
  for (std::size_t n = 0; n < g.nodes.size(); ++n) g.nodes[n].flops = flops[n], g.nodes[n].seconds = seconds[n];
  if (!g.values[g.output].batch_first)
    throw FormatError(g.source + ": the output '" + g.values[g.output].name + "' does not keep the batch as its first axis (" +
                      shape_text(seen[0].shape[g.output]) + " for one sample): cnet needs [batch, ...]");

  std::vector<std::size_t> last_use(g.values.size(), 0);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].in)
      if (v >= 0) last_use[v] = n;
  last_use[g.output] = g.nodes.size();
  std::set<int> live{g.input};
  g.segments.clear();
  Segment current{0, 0, g.input, -1, 0, 0};
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    for (int v : node.out)
      if (v >= 0 && (last_use[v] > n || v == g.output)) live.insert(v);
    for (int v : node.in)
      if (v >= 0 && !g.values[v].constant && last_use[v] == n && v != g.output) live.erase(v);
    current.flops += g.nodes[n].flops;
    current.seconds += g.nodes[n].seconds;
    const bool one_crosses = live.size() == 1 && g.values[*live.begin()].batch_first;
    if (one_crosses && (n + 1 == g.nodes.size() || *live.begin() != g.output)) {
      current.last = n + 1;
      current.output = *live.begin();
      g.segments.push_back(current);
      current = Segment{n + 1, 0, current.output, -1, 0, 0};
    }
  }
  if (g.segments.empty() || g.segments.back().last != g.nodes.size())
    throw FormatError(g.source + ": the graph's last operators do not lead to its output alone");
}

}  // namespace cnet::inference
