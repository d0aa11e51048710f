#include "cnet/inference/output_sink.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

namespace cnet::inference {
namespace {

constexpr auto kCommitEvery = std::chrono::milliseconds(500);

std::string clock_text(double s) {
  char b[32];
  long t = std::lround(s);
  std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  return b;
}

}  // namespace

OutputSink::OutputSink(const std::string& name, const std::string& output, std::size_t rows, std::size_t width, const std::string& identity,
                       std::size_t micro_batches, bool resume)
    : name_(name), output_(output), partial_(output + ".partial"), width_(width), total_(micro_batches),
      log_(resume ? ProgressLog::resume(output + ".progress", identity, static_cast<std::uint32_t>(micro_batches))
                  : ProgressLog::start(output + ".progress", identity)) {
  done_before_ = log_.done().size();
  bool finished_before = resume && done_before_ == total_ && !std::filesystem::exists(partial_) && std::filesystem::exists(output_);
  if (finished_before) return;  // an earlier run completed it: nothing left to write
  if (resume && !std::filesystem::exists(partial_))
    throw FormatError("cannot resume into " + output_ + ": " + partial_ + " is missing (run without --resume to start over)");
  file_.emplace(partial_, std::vector<TensorSpec>{{"output", {rows, width}}}, std::map<std::string, std::string>{{"cnet.name", name}, {"format", "pt"}},
                !resume);
}

OutputSink::~OutputSink() {
  if (committer_.joinable()) {  // a run that failed: the rows written so far are still synced, then recorded
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    committer_.join();
  }
}

void OutputSink::start() {
  start_ = last_line_ = Clock::now();
  if (file_) committer_ = std::thread([this] { commit_loop(); });
}

void OutputSink::put(const MicroBatch& mb, std::span<const float> rows) {
  rethrow_failure();
  file_->write("output", mb.first_row * width_, rows);
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(mb.index);  // after the write: a sync that takes it covers its rows
  }
  rows_ += mb.rows;
  ++put_count_;
  if (Clock::now() - last_line_ >= std::chrono::seconds(1)) line();
}

void OutputSink::commit(std::vector<std::uint32_t>& batch) {
  if (batch.empty()) return;
  file_->sync();  // rows first, then the record that they are there
  for (auto mb : batch) log_.record(mb);
  log_.sync();
  batch.clear();
}

void OutputSink::commit_loop() {
  std::vector<std::uint32_t> batch;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, kCommitEvery, [&] { return stopping_; });
    bool last = stopping_;  // asked to stop: one more round for what is pending, then out
    batch.swap(pending_);
    lock.unlock();
    try {
      commit(batch);
    } catch (...) {
      lock.lock();
      failure_ = std::current_exception();
      return;
    }
    lock.lock();
    if (last) return;
  }
}

void OutputSink::rethrow_failure() {
  std::lock_guard lock(mutex_);
  if (failure_) std::rethrow_exception(failure_);
}

void OutputSink::finish() {
  if (committer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    committer_.join();
  }
  rethrow_failure();
  if (!file_) return;
  std::vector<std::uint32_t> rest;
  rest.swap(pending_);
  commit(rest);
  file_.reset();
  if (log_.done().size() != total_)
    throw FormatError(partial_ + ": " + std::to_string(total_ - log_.done().size()) + " micro-batches missing at the end");
  std::error_code ec;
  std::filesystem::rename(partial_, output_, ec);
  if (ec) throw FormatError("cannot rename " + partial_ + " to " + output_ + ": " + ec.message());
}

void OutputSink::line() {
  double s = elapsed(), rate = static_cast<double>(rows_) / std::max(s, 1e-9);
  std::size_t done = done_before_ + put_count_;
  double per_mb = s / static_cast<double>(std::max<std::size_t>(put_count_, 1));
  std::fprintf(stderr, "%s: %zu/%zu micro-batches, %zu rows this run, %.0f rows/s, ETA %s\n", name_.c_str(), done, total_, rows_,
               rate, clock_text(per_mb * static_cast<double>(total_ - done)).c_str());
  std::fflush(stderr);
  last_line_ = Clock::now();
}

double OutputSink::elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

}  // namespace cnet::inference
