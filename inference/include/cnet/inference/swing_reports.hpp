#pragma once
// The reports behind a swinging cut (boundary_swing.hpp) over UcxChannel: the stage after the cut sends
// one per micro-batch, in order, to the stage before it, which takes them into its BoundarySwing as
// they arrive, and all of them before it finishes (so no send is left unmatched and a stage that dies
// or hangs meanwhile is reported as such).

#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "cnet/inference/boundary_swing.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::inference {

// Its own tag, above any micro-batch's.
constexpr std::uint32_t kSwingReportTag = 0xfffffffcu;

class SwingReportsIn {
 public:
  // From `downstream`, one for each of `micro_batches` (their rows weigh each report).
  SwingReportsIn(transport::UcxChannel& ch, std::uint32_t downstream, const std::vector<MicroBatch>& micro_batches, BoundarySwing& cut)
      : ch_(ch), from_(downstream), micro_batches_(micro_batches), cut_(cut) {}
  void take_arrived() { take(false); }
  void take_all() { take(true); }

 private:
  void take(bool all);
  transport::UcxChannel& ch_;
  std::uint32_t from_;
  const std::vector<MicroBatch>& micro_batches_;
  BoundarySwing& cut_;
  SwingReport arriving_;
  std::unique_ptr<transport::UcxChannel::Request> request_;
  std::size_t taken_ = 0;
};

class SwingReportsOut {
 public:
  SwingReportsOut(transport::UcxChannel& ch, std::uint32_t upstream) : ch_(ch), to_(upstream) {}
  void send(const SwingReport& r);
  void wait_all();

 private:
  transport::UcxChannel& ch_;
  std::uint32_t to_;
  std::list<std::pair<SwingReport, std::unique_ptr<transport::UcxChannel::Request>>> sending_;  // addresses stay put
};

}  // namespace cnet::inference
