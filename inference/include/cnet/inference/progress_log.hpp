#pragma once
// The record of which micro-batches of an output file are safely on disk, so `cnet-run --resume` after a
// crash redoes only the rest. A text file beside the output: a first line naming the job it belongs to
// (model, input, micro-batch size), then "done N" per micro-batch, appended only after the rows were
// synced to the output file. A torn last line (a crash mid-append) is ignored, so nothing is lost or
// counted twice. The log is also the output's lock: while one run holds it (flock), another run for the
// same output is refused instead of writing into it too.

#include <cstdint>
#include <set>
#include <string>

namespace cnet::inference {

class ProgressLog {
 public:
  // A new log for a fresh run (replaces an old one). Throws std::runtime_error when another run holds it.
  static ProgressLog start(const std::string& path, const std::string& job_identity);
  // An existing log; throws std::runtime_error when missing, held by another run, written for another
  // job, or recording a micro-batch that is not one of this job's `micro_batches`.
  static ProgressLog resume(const std::string& path, const std::string& job_identity, std::uint32_t micro_batches);
  ~ProgressLog();
  ProgressLog(ProgressLog&& other) noexcept;
  ProgressLog(const ProgressLog&) = delete;

  const std::set<std::uint32_t>& done() const { return done_; }
  void record(std::uint32_t micro_batch);  // appended; call sync() to make the records durable
  void sync();

 private:
  ProgressLog(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::set<std::uint32_t> done_;
};

// A file's identity, "sha256:HEX-SIZE" of its whole content (streamed): a resumed run must use the same
// model and input it started with, byte for byte, or its output would mix old rows and new.
std::string file_identity(const std::string& path);
// The same form for text (an identity made of several files').
std::string text_identity(const std::string& text);

}  // namespace cnet::inference
