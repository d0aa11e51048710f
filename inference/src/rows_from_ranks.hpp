#pragma once
// At the writer: finished rows that other ranks send (the other replicas' last stages), each received
// into a buffer of its own and put into the output as it arrives, in any order, so one rank running a
// little behind does not stall the writer's own work.

#include <list>
#include <memory>
#include <vector>

#include "cnet/inference/output_sink.hpp"
#include "cnet/inference/schedule.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::inference {

class RowsFromRanks {
 public:
  RowsFromRanks(transport::UcxChannel& ch, OutputSink& sink, std::size_t width) : ch_(ch), sink_(sink), width_(width) {}

  // Posts the receive of micro-batch `mb`'s rows from `rank`.
  void expect(std::uint32_t rank, const MicroBatch& mb);
  // Puts what has arrived into the output; returns at once.
  void take_arrived();
  // Waits for every expected micro-batch (blocking, so a rank that died or hung is reported, or times
  // out) and puts each into the output.
  void take_all();
  bool empty() const { return incoming_.empty(); }

 private:
  struct Incoming {
    MicroBatch mb;
    std::vector<float> rows;
    std::unique_ptr<transport::UcxChannel::Request> request;
  };
  transport::UcxChannel& ch_;
  OutputSink& sink_;
  std::size_t width_;
  std::list<Incoming> incoming_;
};

}  // namespace cnet::inference
