// transport_check: exercises UcxChannel and the collectives across the ranks of a job and checks every
// result against what a single process computes from the same inputs. Prints one line per check on
// rank 0; exits 1 on any mismatch.
//   srun --mpi=pmix -N2 -n4 transport_check
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/collectives.hpp"
#include "cnet/transport/ucx_channel.hpp"

using namespace cnet::transport;

namespace {
int failures = 0;
void report(std::uint32_t rank, bool ok, const std::string& what) {
  if (!ok) ++failures;
  if (rank == 0 || !ok) std::printf("rank %u: %s %s\n", rank, ok ? "ok  " : "FAIL", what.c_str());
}

// Inputs whose sum depends on the order of addition: magnitudes from 1e-8 to 1e8.
template <typename T>
T input(std::uint32_t rank, std::size_t i) {
  return static_cast<T>(std::pow(10.0, static_cast<double>((rank * 7 + i * 3) % 17) - 8.0) * ((i + rank) % 2 ? 1 : -1));
}

template <typename T>
void check_allreduce(Collectives& coll, UcxChannel& ch, std::size_t count, ReduceMode mode, const char* type) {
  std::vector<T> data(count), expected(count);
  for (std::size_t i = 0; i < count; ++i) {
    data[i] = input<T>(ch.rank(), i);
    T acc = input<T>(0, i);  // one process adding the ranks' arrays in rank order
    for (std::uint32_t r = 1; r < ch.size(); ++r) acc = acc + input<T>(r, i);
    expected[i] = acc;
  }
  coll.allreduce_sum(std::span(data), mode);
  bool ok = true;
  double worst = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (mode == ReduceMode::deterministic) ok = ok && std::memcmp(&data[i], &expected[i], sizeof(T)) == 0;
    double scale = 0;
    for (std::uint32_t r = 0; r < ch.size(); ++r) scale += std::fabs(static_cast<double>(input<T>(r, i)));
    worst = std::max(worst, std::fabs(static_cast<double>(data[i] - expected[i])) / scale);
  }
  ok = ok && worst < (sizeof(T) == 4 ? 1e-6 : 1e-14);
  // Every rank must hold the very same bits, in either mode.
  std::vector<std::byte> all(count * sizeof(T) * ch.size());
  coll.allgather(std::as_bytes(std::span(data)), all);
  for (std::uint32_t r = 1; r < ch.size(); ++r)
    ok = ok && std::memcmp(all.data(), all.data() + r * count * sizeof(T), count * sizeof(T)) == 0;
  report(ch.rank(), ok,
         std::string("allreduce ") + type + " x" + std::to_string(count) +
             (mode == ReduceMode::deterministic ? " deterministic (bit-identical to rank-order sum)" : " fast") +
             ", worst relative error " + [&] { char b[32]; std::snprintf(b, sizeof b, "%.2g", worst); return std::string(b); }());
}
}  // namespace

int main() {
  try {
    auto boot = PmixBootstrap::connect(std::chrono::seconds(60));
    UcxChannel ch(*boot);
    Collectives coll(ch);
    std::uint32_t me = ch.rank(), n = ch.size();

    // point to point: to the right neighbour, sizes across the eager/rendezvous boundary
    for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{8192}, std::size_t{4} << 20}) {
      std::vector<std::byte> out(size), in(size);
      for (std::size_t i = 0; i < size; ++i) out[i] = std::byte(static_cast<unsigned char>((i * 31 + me) & 0xff));
      auto r = ch.recv((me + n - 1) % n, 7, in);
      auto s = ch.send((me + 1) % n, 7, out);
      ch.wait(*s);
      ch.wait(*r);
      bool ok = true;
      std::uint32_t left = (me + n - 1) % n;
      for (std::size_t i = 0; i < size && ok; ++i) ok = in[i] == std::byte(static_cast<unsigned char>((i * 31 + left) & 0xff));
      report(me, ok, "p2p ring " + std::to_string(size) + " bytes");
    }
    coll.barrier();
    report(me, true, "barrier");
    for (std::uint32_t root = 0; root < n; ++root) {
      std::vector<std::byte> buf(100000, std::byte(me == root ? root + 1 : 0));
      coll.broadcast(buf, root);
      report(me, buf.front() == std::byte(root + 1) && buf.back() == std::byte(root + 1), "broadcast from " + std::to_string(root));
    }
    std::vector<std::byte> all(n * 3);
    std::byte mine[3] = {std::byte(me), std::byte(me + 1), std::byte(me + 2)};
    coll.allgather(mine, all);
    bool ok = true;
    for (std::uint32_t r = 0; r < n; ++r) ok = ok && all[r * 3] == std::byte(r) && all[r * 3 + 2] == std::byte(r + 2);
    report(me, ok, "allgather");
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{100000}, std::size_t{1} << 20}) {
      check_allreduce<float>(coll, ch, count, ReduceMode::deterministic, "float");
      check_allreduce<float>(coll, ch, count, ReduceMode::fast, "float");
      check_allreduce<double>(coll, ch, count, ReduceMode::fast, "double");
    }
    check_allreduce<double>(coll, ch, 4099, ReduceMode::deterministic, "double");
    coll.barrier();
    if (me == 0) std::printf("transport_check: %d failure(s) on rank 0, %u ranks, transports to rank %u: %s\n", failures, n,
                             n - 1, ch.transports_to(n - 1).c_str());
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "transport_check: %s\n", e.what());
    return 1;
  }
}
