#include "cnet/transport/link_test.hpp"

#include <algorithm>
#include <chrono>

namespace cnet::transport {
namespace {

using Clock = std::chrono::steady_clock;
double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

unsigned scaled(std::size_t budget, std::size_t bytes, unsigned most) {
  return static_cast<unsigned>(std::clamp<std::size_t>(budget / std::max<std::size_t>(bytes, 1), 5, std::max(most, 5u)));
}

}  // namespace

unsigned LinkTestOptions::repetitions(std::size_t bytes) const {
  return exact_iters ? iters : scaled(bytes_per_size, bytes, iters);
}

unsigned LinkTestOptions::bandwidth_rounds(std::size_t bytes) const {
  const unsigned per_round = std::max(window, 1u);
  return exact_iters ? (iters + per_round - 1) / per_round : scaled(bytes_per_size, bytes * per_round, iters);
}

std::vector<std::size_t> LinkTestOptions::size_ladder(std::size_t min, std::size_t max) {
  std::vector<std::size_t> out;
  for (std::size_t b = std::max<std::size_t>(min, 1); b <= max; b *= 4) out.push_back(b);
  return out;
}

LinkTestOptions LinkTestOptions::quick() {
  LinkTestOptions o;
  o.sizes = {8, 1u << 20};
  o.iters = 200;
  o.window = 8;
  o.bytes_per_size = 64u << 20;
  return o;
}

PerfRow measure_link(UcxChannel& ch, std::uint32_t peer, bool leader, std::size_t bytes, const LinkTestOptions& o) {
  std::vector<std::byte> buf(bytes), reply_buf(bytes), ack(0);
  PerfRow row{bytes};
  // Latency: ping-pong, one sample per round trip (half of it). Receives are posted before the message
  // can arrive, as ucx_perftest does, so no sample pays for the unexpected-message path.
  unsigned n = o.repetitions(bytes);
  std::vector<double> samples;
  auto pending = leader ? nullptr : ch.recv(peer, 1, buf);
  for (unsigned i = 0; i < n + o.warmup; ++i) {
    auto t0 = Clock::now();
    if (leader) {
      auto reply = ch.recv(peer, 2, reply_buf);
      auto ping = ch.send(peer, 1, buf);
      ch.wait(*ping);
      ch.wait(*reply);
    } else {
      ch.wait(*pending);
      if (i + 1 < n + o.warmup) pending = ch.recv(peer, 1, buf);
      ch.send_blocking(peer, 2, reply_buf);
    }
    if (i >= o.warmup) samples.push_back(micros(Clock::now() - t0) / 2);
  }
  double sum = 0;
  for (double v : samples) sum += v;
  row.latency_avg_us = sum / static_cast<double>(samples.size());
  row.latency_p50_us = percentile(samples, 50);
  row.latency_p99_us = percentile(samples, 99);
  // Bandwidth: a window of messages in flight, then one acknowledgement; round 0 warms up.
  unsigned rounds = o.bandwidth_rounds(bytes);
  Clock::time_point start;
  for (unsigned round = 0; round < rounds + 1; ++round) {
    if (round == 1) start = Clock::now();
    std::vector<std::unique_ptr<UcxChannel::Request>> reqs;
    for (unsigned w = 0; w < o.window; ++w) reqs.push_back(leader ? ch.send(peer, 3, buf) : ch.recv(peer, 3, buf));
    ch.wait_all(reqs);
    if (leader) ch.recv_blocking(peer, 4, ack);
    else ch.send_blocking(peer, 4, ack);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  row.bandwidth_gbytes = static_cast<double>(bytes) * o.window * rounds / seconds / 1e9;
  row.bus_gbytes = row.bandwidth_gbytes;
  if (!leader) return PerfRow{bytes};
  return row;
}

PerfReport link_test(UcxChannel& ch, std::uint32_t leader, std::uint32_t follower, const LinkTestOptions& o,
                     const std::function<void(const PerfRow&)>& on_row) {
  PerfReport report;
  std::uint32_t me = ch.rank();
  if (me != leader && me != follower) return report;
  bool leading = me == leader;
  std::uint32_t peer = leading ? follower : leader;
  report = {"p2p", 2, ch.transports_to(peer), {ch.hostname_of(leader), ch.hostname_of(follower)}, {}};
  for (std::size_t bytes : o.sizes) {
    PerfRow row = measure_link(ch, peer, leading, bytes, o);
    if (!leading) continue;
    report.rows.push_back(row);
    if (on_row) on_row(row);
  }
  return report;
}

}  // namespace cnet::transport
