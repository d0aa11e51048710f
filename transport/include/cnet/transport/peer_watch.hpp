#pragma once
// Watching a rank's process on this node directly: ranks that share a node talk over UCX's shared
// memory, which has no failure handling of its own, so a dead same-node peer is noticed by its exit
// (a pidfd) instead. A rank publishes process_identity(); another opens a PeerWatch on it, which works
// only when both see the same kernel and process (same boot, same PID namespace, same start time).
#include <chrono>
#include <optional>
#include <string>

namespace cnet::transport {

// "BOOT_ID PID STARTTIME" of this process: the kernel's boot id, the pid, its start time in clock ticks
// (/proc/self/stat field 22), so a pid reused by another process after a reboot or a wrap never matches.
std::string process_identity();

class PeerWatch {
 public:
  // A watch on the process `identity` names, nullopt when it is not visible from here as that process
  // (another node or container, gone already, a malformed identity, or a kernel without pidfd_open).
  static std::optional<PeerWatch> open(const std::string& identity);
  PeerWatch(PeerWatch&& other) noexcept;
  PeerWatch& operator=(PeerWatch&& other) noexcept;
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  ~PeerWatch();

  // Whether the process has exited, waiting at most `within` for it (a process dying is briefly
  // unreachable before it counts as exited).
  bool exited(std::chrono::milliseconds within = {}) const;

 private:
  explicit PeerWatch(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace cnet::transport
