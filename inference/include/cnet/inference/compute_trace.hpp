#pragma once
// Where each rank spent the run computing: one span per micro-batch, timed around the stage's forward
// pass. Summed, they say how busy each stage was (a pipeline's stages short of 100% waited: on a slower
// stage, the pipeline filling and draining, transfers, the output); written out with --trace as a
// Chrome trace (Perfetto, chrome://tracing), one row per rank, they show when.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cnet::inference {

struct ComputeSpan {
  static constexpr std::uint32_t kFinish = 0xffffffffu;  // the stage's wait for its last work (GPU stages)
  std::uint32_t micro_batch = 0;
  std::uint32_t rows = 0;
  std::int64_t start_us = 0;  // system clock: comparable across processes, and across nodes as far as NTP keeps them
  std::int64_t end_us = 0;
};

class ComputeClock {
 public:
  template <typename F>
  void time(std::uint32_t micro_batch, std::uint32_t rows, F&& compute) {
    auto t0 = std::chrono::system_clock::now();
    compute();
    auto t1 = std::chrono::system_clock::now();
    spans_.push_back({micro_batch, rows, micros(t0), micros(t1)});
  }
  const std::vector<ComputeSpan>& spans() const { return spans_; }
  double seconds() const;

 private:
  static std::int64_t micros(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  }
  std::vector<ComputeSpan> spans_;
};

struct RankTrace {
  std::string label;  // "stage 1/2 (rank 1 on cn2)"
  std::vector<ComputeSpan> spans;
};

// The Chrome trace event JSON of these ranks (rank order), times from the earliest span.
std::string chrome_trace(const std::vector<RankTrace>& ranks);

}  // namespace cnet::inference
