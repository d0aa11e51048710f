#pragma once
// The link test between two ranks, the one measurement behind `cnet-perf p2p` and the pair tests of
// `cnet-doctor --job`: per message size, a ping-pong for latency (half round trip; average, P50, P99
// over every iteration) and a window of messages in flight for one-way bandwidth. Both ranks of the pair
// call it; the leader gets the numbers.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cnet/transport/perf_report.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::transport {

struct LinkTestOptions {
  std::vector<std::size_t> sizes = size_ladder(8, 64ull << 20);
  unsigned iters = 200, warmup = 20, window = 16;
  std::size_t bytes_per_size = 256ull << 20;  // large sizes repeat less, so every size takes similar time
  // The count someone asked for, at every size: a peer tool measuring the same link (ucx_perftest -n,
  // Open MPI) repeats exactly that often, and a short sample of large messages swings with every hiccup.
  bool exact_iters = false;

  // Timed repetitions of one size: ping-pongs for latency, calls for a collective. Up to `iters`, fewer
  // for large sizes (at least 5) unless `exact_iters`.
  unsigned repetitions(std::size_t bytes) const;
  // Timed windows of `window` messages for bandwidth: at least `iters` messages when `exact_iters`.
  unsigned bandwidth_rounds(std::size_t bytes) const;

  // Message sizes from `min` to `max`, growing x4.
  static std::vector<std::size_t> size_ladder(std::size_t min, std::size_t max);
  // A short test for health checks: 8 B latency and 1 MiB bandwidth, a fraction of a second per pair.
  static LinkTestOptions quick();
};

// One size between this rank and `peer`; `leader` is the side that times (its row is filled, the
// other side's holds only `bytes`).
PerfRow measure_link(UcxChannel& channel, std::uint32_t peer, bool leader, std::size_t bytes, const LinkTestOptions& options);

// Every size in order between ranks `leader` and `follower` of the channel (other ranks return at once
// with an empty report). The leader's report has mode p2p and hosts {leader's, follower's}; `on_row`
// sees each row on the leader as it finishes.
PerfReport link_test(UcxChannel& channel, std::uint32_t leader, std::uint32_t follower, const LinkTestOptions& options,
                     const std::function<void(const PerfRow&)>& on_row = {});

}  // namespace cnet::transport
