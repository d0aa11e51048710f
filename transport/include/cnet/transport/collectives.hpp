#pragma once
// Collectives over UcxChannel: barrier, broadcast, allgather, allreduce (sum).
//
// Allreduce has two modes. `fast`: recursive doubling for small messages, ring reduce-scatter +
// allgather for large ones. `deterministic`: every element is summed in rank order,
// ((r0 + r1) + r2) + ..., whatever the size, timing or number of messages, so results are bit-identical
// across runs, algorithms and transports, and equal to one process adding the ranks' arrays in order.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "cnet/transport/ucx_channel.hpp"

namespace cnet::transport {

enum class ReduceMode { fast, deterministic };

class Collectives {
 public:
  explicit Collectives(UcxChannel& channel) : ch_(channel) {}

  void barrier();
  void broadcast(std::span<std::byte> data, std::uint32_t root);
  // `all` holds size() blocks of mine.size() bytes, in rank order.
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all);
  template <typename T>
  void allreduce_sum(std::span<T> data, ReduceMode mode = ReduceMode::deterministic);

  // Below this many bytes the fast mode uses recursive doubling instead of the ring.
  static constexpr std::size_t kSmallAllreduceBytes = 64 * 1024;

 private:
  std::uint32_t next_tag();
  template <typename T> void recursive_doubling(std::span<T> data, std::uint32_t seq);
  template <typename T> void ring(std::span<T> data, std::uint32_t seq);
  template <typename T> void rank_ordered(std::span<T> data, std::uint32_t seq);
  // Passes reduced chunks round the ring: this rank starts out owning chunk `owned`.
  template <typename T> void allgather_chunks(std::span<T> data, std::uint32_t owned, std::uint32_t tag_base);

  // Receive space for `count` values, kept between calls: a fresh multi-MiB buffer per call would
  // come straight from mmap and fault in every page again each time.
  template <typename T> std::span<T> scratch(std::size_t count);

  UcxChannel& ch_;
  std::uint32_t sequence_ = 0;
  std::unique_ptr<std::byte[]> scratch_;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace cnet::transport
