#pragma once
// How a job is laid out: layers split into pipeline stages of balanced estimated cost (not equal
// counts), ranks arranged as replicas x stages, and the input cut into micro-batches that every scheme
// (and the single-process check) processes identically.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cnet/inference/model.hpp"

namespace cnet::inference {

struct StageRange {
  std::size_t first = 0, last = 0;  // layers [first, last)
  double cost = 0;
};

// Contiguous stages minimising the most expensive one (exact, by dynamic programming over the layers'
// cost()). Throws std::invalid_argument when there are more stages than layers.
std::vector<StageRange> balance_stages(const ModelSpec& model, unsigned stages);
// The same for stages of unequal speeds (cost a second, one per stage): the slowest stage's time
// cost/speed is minimised instead.
std::vector<StageRange> balance_stages(const ModelSpec& model, const std::vector<double>& speeds);

// After a run, the split that would even out stages of the speeds they showed (each stage's cost over
// the seconds it computed): given when it cuts the slowest stage's time by at least `min_gain` (a
// share) and that stage computed for `min_seconds` or more, so that neither a machine's noise nor a
// short run's warm-up is reported as advice.
struct SplitAdvice {
  std::vector<std::size_t> layers_per_stage;
  std::size_t slowest = 0;  // the stage that computed longest
  double gain = 0;          // the share of its time the split saves
};
std::optional<SplitAdvice> faster_split(const ModelSpec& model, const std::vector<StageRange>& current,
                                        const std::vector<double>& busy_seconds, double min_gain = 0.05,
                                        double min_seconds = 1.0);

// Stages of the given layer counts, in order (--stage-layers: a split the user chose, e.g. more layers
// on a faster node). Throws std::invalid_argument naming what does not fit: the count of stages against
// the job's, the layers against the model's, a stage of no layer.
std::vector<StageRange> split_stages(const ModelSpec& model, const std::vector<std::size_t>& layers_per_stage, unsigned stages);

// "9,7" -> {9, 7}. Throws std::invalid_argument on anything but positive whole numbers between commas.
std::vector<std::size_t> parse_stage_layers(const std::string& list);

enum class Scheme { pipeline, data, hybrid };

struct JobLayout {
  unsigned stages = 1, replicas = 1;
  unsigned stage_of(unsigned rank) const { return rank % stages; }
  unsigned replica_of(unsigned rank) const { return rank / stages; }
  unsigned rank_of(unsigned replica, unsigned stage) const { return replica * stages + stage; }
  unsigned writer() const { return stages - 1; }  // last stage of replica 0 writes the output
};

// pipeline: every rank is a stage (num_stages, if given, must equal the rank count); data: every rank a
// whole-model replica; hybrid: num_stages per replica, ranks / num_stages replicas. Throws
// std::invalid_argument saying which srun/-n fits.
JobLayout make_layout(Scheme scheme, unsigned ranks, unsigned num_stages);

struct MicroBatch {
  std::uint32_t index = 0;
  std::size_t first_row = 0, rows = 0;
};
std::vector<MicroBatch> micro_batches(std::size_t rows, std::size_t micro_batch);

// The micro-batches replica `replica` processes, in order: round-robin over the to-do list.
std::vector<MicroBatch> share_of(const std::vector<MicroBatch>& todo, unsigned replica, unsigned replicas);

}  // namespace cnet::inference
