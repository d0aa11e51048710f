#pragma once
// Bootstrap: who am I in this job, and a blob exchange between all ranks, used to wire up the data path.
// PmixBootstrap talks to Slurm's PMIx server (srun --mpi=pmix) or cnet's own for --local N.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cnet::transport {

class BootstrapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Placement {
  std::uint32_t rank = 0;
  std::uint32_t size = 1;
  std::uint32_t local_rank = 0;
  std::uint32_t local_size = 1;
  std::uint32_t node_id = 0;
  std::uint32_t num_nodes = 1;
  std::string hostname;
  std::string job_id;
};

using Blob = std::vector<std::byte>;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual const Placement& placement() const = 0;
  // Every rank contributes `mine` under `key`; returns every rank's contribution in rank order.
  virtual std::vector<Blob> allgather(std::string_view key, std::span<const std::byte> mine) = 0;
  [[noreturn]] virtual void abort(int status, std::string_view message) = 0;

  // Typed allgathers: every rank's text, or every rank's array of plain values (an array whose size
  // is not a whole number of values is reported as damaged, naming the rank and key).
  std::vector<std::string> allgather_text(std::string_view key, std::string_view mine);
  template <typename T>
  std::vector<std::vector<T>> allgather_values(std::string_view key, std::span<const T> mine);
};

// A job of one process: for single-process runs and checks that need no launcher.
class SingleProcessBootstrap final : public Bootstrap {
 public:
  SingleProcessBootstrap();
  const Placement& placement() const override { return placement_; }
  std::vector<Blob> allgather(std::string_view, std::span<const std::byte> mine) override { return {Blob(mine.begin(), mine.end())}; }
  [[noreturn]] void abort(int status, std::string_view message) override;

 private:
  Placement placement_;
};

class PmixBootstrap final : public Bootstrap {
 public:
  // Connects to the PMIx server named in the environment. Throws BootstrapError when there is none
  // (e.g. srun without --mpi=pmix), instead of silently making every task rank 0.
  static std::unique_ptr<PmixBootstrap> connect(std::chrono::seconds timeout = std::chrono::seconds(120));
  ~PmixBootstrap() override;

  const Placement& placement() const override { return placement_; }
  std::vector<Blob> allgather(std::string_view key, std::span<const std::byte> mine) override;
  [[noreturn]] void abort(int status, std::string_view message) override;

  // The PMIx primitives allgather is made of.
  void put(std::string_view key, std::span<const std::byte> blob);
  void put(std::string_view key, std::string_view text);
  void commit();
  // Waits until every rank arrives, exchanging committed data when collect_data is set. On timeout the
  // error names the ranks whose arrival could not be confirmed.
  void fence(bool collect_data = true);
  Blob get(std::uint32_t rank, std::string_view key);
  std::string get_string(std::uint32_t rank, std::string_view key);

 private:
  explicit PmixBootstrap(std::chrono::seconds timeout);
  std::vector<std::uint32_t> ranks_missing_from_fence(unsigned epoch);
  Placement placement_;
  std::chrono::seconds timeout_;
  unsigned fence_epoch_ = 0;
  struct PmixState;
  std::unique_ptr<PmixState> pmix_;
};

std::span<const std::byte> as_bytes(std::string_view text);

template <typename T>
std::vector<std::vector<T>> Bootstrap::allgather_values(std::string_view key, std::span<const T> mine) {
  static_assert(std::is_trivially_copyable_v<T>, "allgather_values sends raw bytes");
  auto blobs = allgather(key, std::as_bytes(mine));
  std::vector<std::vector<T>> out(blobs.size());
  for (std::size_t r = 0; r < blobs.size(); ++r) {
    if (blobs[r].size() % sizeof(T) != 0)
      throw BootstrapError("rank " + std::to_string(r) + " sent a damaged '" + std::string(key) + "' (" +
                           std::to_string(blobs[r].size()) + " bytes)");
    out[r].resize(blobs[r].size() / sizeof(T));
    if (!out[r].empty()) std::memcpy(out[r].data(), blobs[r].data(), blobs[r].size());
  }
  return out;
}

}  // namespace cnet::transport
