#include "cnet/inference/schedule.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "cnet/common/text.hpp"

namespace cnet::inference {

std::vector<StageRange> balance_stages(const ModelSpec& model, unsigned stages) {
  return balance_stages(model, std::vector<double>(stages, 1.0));
}

std::vector<StageRange> balance_stages(const ModelSpec& model, const std::vector<double>& speeds) {
  const std::size_t n = model.layers.size(), stages = speeds.size();
  if ((stages == 0 || stages > n) && model.graph)
    throw std::invalid_argument(std::to_string(stages) + " stages asked, but the graph has " + std::to_string(n) +
                                " part(s) between places where exactly one tensor crosses (the only places a stage can end): use between 1 and " +
                                std::to_string(n) + " stages");
  if (stages == 0 || stages > n)
    throw std::invalid_argument(std::to_string(stages) + " stages for a model of " + std::to_string(n) +
                                " layers: use between 1 and " + std::to_string(n) + " stages");
  for (double speed : speeds)
    if (!(speed > 0)) throw std::invalid_argument("a stage's speed must be positive");
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + model.layers[i].cost();
  // best[k][i]: the lowest possible time of the slowest stage splitting layers [0, i) into k stages.
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> cut(stages + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= stages; ++k)
    for (std::size_t i = k; i <= n; ++i)
      for (std::size_t j = k - 1; j < i; ++j) {
        double c = std::max(best[k - 1][j], (prefix[i] - prefix[j]) / speeds[k - 1]);
        if (c < best[k][i]) best[k][i] = c, cut[k][i] = j;
      }
  std::vector<StageRange> out(stages);
  std::size_t end = n;
  for (std::size_t k = stages; k > 0; --k) {
    std::size_t start = cut[k][end];
    out[k - 1] = {start, end, prefix[end] - prefix[start]};
    end = start;
  }
  return out;
}

std::optional<SplitAdvice> faster_split(const ModelSpec& model, const std::vector<StageRange>& current,
                                        const std::vector<double>& busy_seconds, double min_gain, double min_seconds) {
  if (current.size() < 2 || busy_seconds.size() != current.size()) return std::nullopt;
  std::vector<double> speeds;
  std::size_t slowest = 0;
  for (std::size_t k = 0; k < current.size(); ++k) {
    if (!(busy_seconds[k] > 0) || !(current[k].cost > 0)) return std::nullopt;  // a stage that did nothing shows no speed
    speeds.push_back(current[k].cost / busy_seconds[k]);
    if (busy_seconds[k] > busy_seconds[slowest]) slowest = k;
  }
  if (busy_seconds[slowest] < min_seconds) return std::nullopt;
  auto better = balance_stages(model, speeds);
  double predicted = 0;
  for (std::size_t k = 0; k < better.size(); ++k) predicted = std::max(predicted, better[k].cost / speeds[k]);
  const double gain = 1 - predicted / busy_seconds[slowest];
  if (gain < min_gain) return std::nullopt;
  SplitAdvice advice{{}, slowest, gain};
  for (const auto& stage : better) advice.layers_per_stage.push_back(stage.last - stage.first);
  return advice;
}

std::vector<StageRange> split_stages(const ModelSpec& model, const std::vector<std::size_t>& layers_per_stage, unsigned stages) {
  const std::size_t n = model.layers.size();
  if (layers_per_stage.size() != stages)
    throw std::invalid_argument("--stage-layers names " + std::to_string(layers_per_stage.size()) + " stages, the job has " +
                                std::to_string(stages) + " per replica: give one layer count per stage, or run that many stages (--num-stages)");
  std::size_t total = 0;
  for (std::size_t count : layers_per_stage) {
    if (count == 0) throw std::invalid_argument("--stage-layers: every stage needs at least one layer");
    total += count;
  }
  if (total != n)
    throw std::invalid_argument("--stage-layers adds up to " + std::to_string(total) + " layers, the model has " + std::to_string(n) +
                                ": the counts must add up to it");
  std::vector<StageRange> out;
  std::size_t first = 0;
  for (std::size_t count : layers_per_stage) {
    double cost = 0;
    for (std::size_t i = first; i < first + count; ++i) cost += model.layers[i].cost();
    out.push_back({first, first + count, cost});
    first += count;
  }
  return out;
}

std::vector<std::size_t> parse_stage_layers(const std::string& list) {
  std::vector<std::size_t> out;
  for (const std::string& word : common::split_fields(list)) {
    const auto count = common::parse_unsigned(word);
    if (!count) throw std::invalid_argument("--stage-layers: '" + word + "' is not a layer count (one per stage, in order, e.g. 9,7)");
    out.push_back(*count);
  }
  return out;
}

JobLayout make_layout(Scheme scheme, unsigned ranks, unsigned num_stages) {
  auto fail = [](const std::string& s) { throw std::invalid_argument(s); };
  if (ranks == 0) fail("no ranks");
  switch (scheme) {
    case Scheme::data:
      if (num_stages > 1) fail("--parallel-scheme data runs the whole model on every rank; drop --num-stages or use hybrid");
      return {1, ranks};
    case Scheme::pipeline:
      if (num_stages != 0 && num_stages != ranks)
        fail("--num-stages " + std::to_string(num_stages) + " needs " + std::to_string(num_stages) + " ranks, the job has " +
             std::to_string(ranks) + " (srun -n" + std::to_string(num_stages) + ", or --parallel-scheme hybrid for replicas)");
      return {ranks, 1};
    case Scheme::hybrid:
      if (num_stages == 0 || ranks % num_stages != 0)
        fail("--parallel-scheme hybrid needs --num-stages dividing the " + std::to_string(ranks) + " ranks");
      return {num_stages, ranks / num_stages};
  }
  return {};
}

std::vector<MicroBatch> micro_batches(std::size_t rows, std::size_t micro_batch) {
  if (micro_batch == 0) throw std::invalid_argument("--micro-batch must be at least 1 row");
  std::vector<MicroBatch> out;
  for (std::size_t r = 0; r < rows; r += micro_batch)
    out.push_back({static_cast<std::uint32_t>(out.size()), r, std::min(micro_batch, rows - r)});
  return out;
}

std::vector<MicroBatch> share_of(const std::vector<MicroBatch>& todo, unsigned replica, unsigned replicas) {
  std::vector<MicroBatch> out;
  for (std::size_t k = replica; k < todo.size(); k += replicas) out.push_back(todo[k]);
  return out;
}

}  // namespace cnet::inference
