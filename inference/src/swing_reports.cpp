#include "cnet/inference/swing_reports.hpp"

#include <span>

namespace cnet::inference {

void SwingReportsIn::take(bool all) {
  while (taken_ < micro_batches_.size()) {
    if (!request_) request_ = ch_.recv(from_, kSwingReportTag, std::as_writable_bytes(std::span(&arriving_, 1)));
    if (all) ch_.wait(*request_);
    else if (!ch_.test(*request_)) return;
    request_.reset();
    cut_.downstream_measured(arriving_, micro_batches_[taken_++].rows);
  }
}

void SwingReportsOut::send(const SwingReport& r) {
  while (!sending_.empty() && ch_.test(*sending_.front().second)) sending_.pop_front();
  auto& [copy, request] = sending_.emplace_back(r, nullptr);
  request = ch_.send(to_, kSwingReportTag, std::as_bytes(std::span(&copy, 1)));
}

void SwingReportsOut::wait_all() {
  for (auto& [report, request] : sending_) ch_.wait(*request);
  sending_.clear();
}

}  // namespace cnet::inference
