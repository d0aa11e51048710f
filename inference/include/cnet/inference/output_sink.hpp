#pragma once
// The writer's side of an inference job: rows go into OUTPUT.partial at their row offset (any arrival
// order), and a committer thread makes them durable in groups: it syncs the file, then records the
// synced micro-batches in OUTPUT.progress and syncs that, every half second. The compute thread never
// waits for the disk, and no micro-batch is recorded done before its rows are on disk. finish() renames
// OUTPUT.partial to OUTPUT once every micro-batch is in, so a file by the output's name is always
// complete. A progress line every second.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cnet/inference/progress_log.hpp"
#include "cnet/inference/safetensors.hpp"
#include "cnet/inference/schedule.hpp"

namespace cnet::inference {

class OutputSink {
 public:
  // `identity` ties the progress log to the model, input and micro-batch size; `resume` reopens both.
  OutputSink(const std::string& label, const std::string& output, std::size_t rows, std::size_t width, const std::string& identity,
             std::size_t micro_batches, bool resume);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  // What earlier runs finished (only before start()).
  const std::set<std::uint32_t>& done() const { return log_.done(); }

  void start();  // the clock, and the committer
  // Writes a micro-batch's rows; throws what the committer met (a full disk, an I/O error).
  void put(const MicroBatch& mb, std::span<const float> rows);
  // Stops the committer, makes the rest durable and renames the file; throws when micro-batches are missing.
  void finish();
  void line();
  std::size_t rows_this_run() const { return rows_; }
  double elapsed() const;

 private:
  using Clock = std::chrono::steady_clock;
  void commit_loop();
  void commit(std::vector<std::uint32_t>& batch);  // sync the rows, then record them
  void rethrow_failure();

  std::string name_, output_, partial_;
  std::size_t width_, total_, done_before_ = 0, rows_ = 0, put_count_ = 0;
  ProgressLog log_;  // the committer's alone while it runs
  std::optional<SafetensorsWriter> file_;
  Clock::time_point start_, last_line_;

  std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  std::vector<std::uint32_t> pending_;  // written, not yet synced
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread committer_;
};

}  // namespace cnet::inference
