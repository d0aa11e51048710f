#include "cnet/transport/collectives.hpp"

#include <algorithm>
#include <memory>
#include <vector>

namespace cnet::transport {
namespace {

template <typename T>
std::span<const std::byte> bytes_of(std::span<T> s) { return std::as_bytes(s); }
template <typename T>
std::span<std::byte> writable_bytes_of(std::span<T> s) { return std::as_writable_bytes(s); }

// out[i] = out[i] + x[i] (or x[i] + out[i]: with two NaNs the first one's payload wins) and
// out[i] = a[i] + b[i], over memory that does not overlap, so they vectorise.
template <typename T>
void add_into(T* __restrict out, const T* __restrict x, std::size_t len, bool x_first = false) {
  if (x_first) for (std::size_t i = 0; i < len; ++i) out[i] = x[i] + out[i];
  else for (std::size_t i = 0; i < len; ++i) out[i] = out[i] + x[i];
}
template <typename T>
void sum_into(T* __restrict out, const T* __restrict a, const T* __restrict b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) out[i] = a[i] + b[i];
}

// Chunk c of n over `count` elements: [count*c/n, count*(c+1)/n).
std::size_t chunk_begin(std::size_t count, std::uint32_t c, std::uint32_t n) { return count * c / n; }

}  // namespace

template <typename T>
std::span<T> Collectives::scratch(std::size_t count) {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  if (count * sizeof(T) > scratch_bytes_) {
    scratch_.reset(new std::byte[count * sizeof(T)]);  // uninitialised: receives fill it
    scratch_bytes_ = count * sizeof(T);
  }
  return {reinterpret_cast<T*>(scratch_.get()), count};
}

// Tags: a fresh sequence number per collective call (upper 24 bits), the phase or step in the lower 8.
std::uint32_t Collectives::next_tag() { return (++sequence_ & 0xffffff) << 8; }

void Collectives::barrier() {
  std::uint32_t seq = next_tag(), n = ch_.size(), r = ch_.rank();
  unsigned step = 0;
  for (std::uint32_t k = 1; k < n; k <<= 1, ++step) {  // dissemination
    auto recv = ch_.recv((r + n - k) % n, seq | step, {});
    auto send = ch_.send((r + k) % n, seq | step, {});
    ch_.wait(*send);
    ch_.wait(*recv);
  }
}

void Collectives::broadcast(std::span<std::byte> data, std::uint32_t root) {
  std::uint32_t seq = next_tag(), n = ch_.size();
  std::uint32_t vr = (ch_.rank() + n - root) % n, mask = 1;
  while (mask < n) {  // binomial tree: receive from the parent...
    if (vr & mask) {
      ch_.recv_blocking((vr - mask + root) % n, seq, data);
      break;
    }
    mask <<= 1;
  }
  std::vector<std::unique_ptr<UcxChannel::Request>> sends;
  for (mask >>= 1; mask > 0; mask >>= 1)  // ...then forward to the children
    if (vr + mask < n) sends.push_back(ch_.send((vr + mask + root) % n, seq, data));
  ch_.wait_all(sends);
}

void Collectives::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  std::uint32_t seq = next_tag(), n = ch_.size(), r = ch_.rank();
  std::size_t block = mine.size();
  if (all.size() != block * n) throw TransportError("allgather: output must hold size() blocks of the input size");
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(block * r));
  for (std::uint32_t step = 0; step + 1 < n; ++step) {  // ring
    std::uint32_t send_block = (r + n - step) % n, recv_block = (r + n - step - 1) % n;
    auto recv = ch_.recv((r + n - 1) % n, seq, all.subspan(block * recv_block, block));
    auto send = ch_.send((r + 1) % n, seq, all.subspan(block * send_block, block));
    ch_.wait(*send);
    ch_.wait(*recv);
  }
}

template <typename T>
void Collectives::allreduce_sum(std::span<T> data, ReduceMode mode) {
  std::uint32_t seq = next_tag();
  if (ch_.size() == 1 || data.empty()) return;
  if (mode == ReduceMode::deterministic) rank_ordered(data, seq);
  else if (data.size_bytes() < kSmallAllreduceBytes || data.size() < ch_.size()) recursive_doubling(data, seq);
  else ring(data, seq);
}

// Recursive doubling; with a non-power-of-two size the first 2*rem ranks pair up first. Partners add
// in the same order (lower rank's data first), so every rank ends with the same bits.
template <typename T>
void Collectives::recursive_doubling(std::span<T> data, std::uint32_t seq) {
  std::uint32_t n = ch_.size(), r = ch_.rank(), p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  std::uint32_t rem = n - p2;
  std::span<T> other = scratch<T>(data.size());
  unsigned step = 0;
  int newrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      ch_.send_blocking(r + 1, seq | step, bytes_of(data));
      newrank = -1;
    } else {
      ch_.recv_blocking(r - 1, seq | step, writable_bytes_of(other));
      for (std::size_t i = 0; i < data.size(); ++i) data[i] = other[i] + data[i];
      newrank = static_cast<int>(r / 2);
    }
  } else {
    newrank = static_cast<int>(r - rem);
  }
  ++step;
  auto real = [&](std::uint32_t nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
  if (newrank >= 0) {
    for (std::uint32_t mask = 1; mask < p2; mask <<= 1, ++step) {
      std::uint32_t partner = real(static_cast<std::uint32_t>(newrank) ^ mask);
      auto recv = ch_.recv(partner, seq | step, writable_bytes_of(other));
      auto send = ch_.send(partner, seq | step, bytes_of(data));
      ch_.wait(*send);
      ch_.wait(*recv);
      bool mine_first = (static_cast<std::uint32_t>(newrank) & mask) == 0;
      for (std::size_t i = 0; i < data.size(); ++i) data[i] = mine_first ? data[i] + other[i] : other[i] + data[i];
    }
  }
  step = 0xff;
  if (r < 2 * rem) {
    if (r % 2 == 0) ch_.recv_blocking(r + 1, seq | step, writable_bytes_of(data));
    else ch_.send_blocking(r - 1, seq | step, bytes_of(data));
  }
}

// Ring reduce-scatter, then ring allgather of the reduced chunks: bandwidth-optimal for large data.
template <typename T>
void Collectives::ring(std::span<T> data, std::uint32_t seq) {
  std::uint32_t n = ch_.size(), r = ch_.rank();
  std::size_t count = data.size();
  std::span<T> incoming = scratch<T>(count / n + 1);
  for (std::uint32_t step = 0; step + 1 < n; ++step) {
    std::uint32_t send_c = (r + n - step) % n, recv_c = (r + n - step - 1) % n;
    auto send_span = data.subspan(chunk_begin(count, send_c, n), chunk_begin(count, send_c + 1, n) - chunk_begin(count, send_c, n));
    std::size_t recv_begin = chunk_begin(count, recv_c, n), recv_len = chunk_begin(count, recv_c + 1, n) - recv_begin;
    auto recv = ch_.recv((r + n - 1) % n, seq | 0x40, writable_bytes_of(std::span(incoming.data(), recv_len)));
    auto send = ch_.send((r + 1) % n, seq | 0x40, bytes_of(send_span));
    ch_.wait(*send);
    ch_.wait(*recv);
    for (std::size_t i = 0; i < recv_len; ++i) data[recv_begin + i] = incoming[i] + data[recv_begin + i];
  }
  allgather_chunks(data, (r + 1) % n, seq | 0x80);  // rank r now owns the reduced chunk (r + 1) % n
}

template <typename T>
void Collectives::allgather_chunks(std::span<T> data, std::uint32_t owned, std::uint32_t tag_base) {
  std::uint32_t n = ch_.size(), r = ch_.rank();
  std::size_t count = data.size();
  for (std::uint32_t step = 0; step + 1 < n; ++step) {
    std::uint32_t send_c = (owned + n - step) % n, recv_c = (owned + n - step - 1) % n;
    std::size_t sb = chunk_begin(count, send_c, n), rb = chunk_begin(count, recv_c, n);
    // Same tag every step: messages between one pair with one tag arrive in order.
    auto recv = ch_.recv((r + n - 1) % n, tag_base, writable_bytes_of(data.subspan(rb, chunk_begin(count, recv_c + 1, n) - rb)));
    auto send = ch_.send((r + 1) % n, tag_base, bytes_of(data.subspan(sb, chunk_begin(count, send_c + 1, n) - sb)));
    ch_.wait(*send);
    ch_.wait(*recv);
  }
}

// Deterministic: rank c gathers chunk c from every rank and adds the contributions in rank order, then
// the reduced chunks go round the ring. Same traffic as the ring, fixed summation order.
template <typename T>
void Collectives::rank_ordered(std::span<T> data, std::uint32_t seq) {
  std::uint32_t n = ch_.size(), r = ch_.rank();
  std::size_t count = data.size(), mine_begin = chunk_begin(count, r, n), mine_len = chunk_begin(count, r + 1, n) - mine_begin;
  std::span<T> parts = scratch<T>(mine_len * n);  // rank p's contribution at p * mine_len (none for r)
  auto part = [&](std::uint32_t p) { return parts.subspan(p * mine_len, mine_len); };
  std::vector<std::unique_ptr<UcxChannel::Request>> requests;
  for (std::uint32_t p = 0; p < n; ++p)
    if (p != r) requests.push_back(ch_.recv(p, seq, writable_bytes_of(part(p))));
  for (std::uint32_t k = 1; k < n; ++k) {  // staggered so not every rank sends to rank 0 first
    std::uint32_t p = (r + k) % n;
    std::size_t b = chunk_begin(count, p, n);
    requests.push_back(ch_.send(p, seq, bytes_of(data.subspan(b, chunk_begin(count, p + 1, n) - b))));
  }
  ch_.wait_all(requests);
  // Each element is ((x0 + x1) + x2) + ... in rank order, summed a block at a time straight into this
  // rank's own chunk, so the loops vectorise and stay in cache. When the chunk holds x0 or x1 the first
  // pass adds the other one to it; a later contribution of this rank would be overwritten before its
  // turn, so it is set aside first.
  T* out = data.data() + mine_begin;
  const T* own = out;
  if (r >= 2) own = std::copy(out, out + mine_len, part(r).data()) - mine_len;
  auto contribution = [&](std::uint32_t p) -> const T* { return p == r ? own : part(p).data(); };
  constexpr std::size_t kBlock = 4096;
  for (std::size_t b = 0; b < mine_len; b += kBlock) {
    std::size_t len = std::min(kBlock, mine_len - b);
    if (r <= 1) add_into(out + b, contribution(1 - r) + b, len, r == 1);
    else sum_into(out + b, contribution(0) + b, contribution(1) + b, len);
    for (std::uint32_t p = 2; p < n; ++p) add_into(out + b, contribution(p) + b, len);
  }
  allgather_chunks(data, r, seq | 0x80);
}

template void Collectives::allreduce_sum<float>(std::span<float>, ReduceMode);
template void Collectives::allreduce_sum<double>(std::span<double>, ReduceMode);

}  // namespace cnet::transport
