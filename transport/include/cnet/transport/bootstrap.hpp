#pragma once
// Bootstrap: who am I in this job, and a key/value exchange between all ranks, over PMIx.
// Under `srun --mpi=pmix` it talks to Slurm's PMIx server in slurmstepd.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
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
  std::string job_id;  // PMIx namespace
};

class Bootstrap {
 public:
  // Connects to the PMIx server named in the environment. Throws BootstrapError when there is none
  // (e.g. srun without --mpi=pmix), instead of silently making every task rank 0.
  static std::unique_ptr<Bootstrap> connect(std::chrono::seconds timeout = std::chrono::seconds(120));

  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;
  ~Bootstrap();

  const Placement& placement() const { return placement_; }

  // Publishes a blob under key for every other rank; visible after commit() and fence().
  void put(std::string_view key, std::span<const std::byte> blob);
  void put(std::string_view key, std::string_view text);
  void commit();
  // Waits until every rank of the job arrives, exchanging committed data when collect_data is set.
  void fence(bool collect_data = true);
  std::vector<std::byte> get(std::uint32_t rank, std::string_view key);
  std::string get_string(std::uint32_t rank, std::string_view key);
  [[noreturn]] void abort(int status, std::string_view message);

 private:
  explicit Bootstrap(std::chrono::seconds timeout);
  Placement placement_;
  std::chrono::seconds timeout_;
  struct PmixState;
  std::unique_ptr<PmixState> pmix_;
};

}  // namespace cnet::transport
