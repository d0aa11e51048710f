#pragma once
// UcxChannel: point-to-point messages between the ranks of a job over UCX (host memory). One UCP
// context and worker per process; worker addresses are exchanged through the Bootstrap; endpoints are
// made on first use. Large messages go zero-copy (UCX rendezvous). A peer that dies turns every wait
// involving it into PeerFailure instead of a hang: a peer on another node through UCX's own failure
// handling (UCP_ERR_HANDLING_MODE_PEER plus keepalive, over tcp or ib), a peer on this node by watching
// its process (PeerWatch), so that same-node ranks keep UCX's shared-memory transports.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cnet/transport/bootstrap.hpp"

namespace cnet::transport {

class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A peer process is gone (killed, crashed, its node lost).
class PeerFailure : public TransportError {
 public:
  PeerFailure(std::uint32_t rank, const std::string& what) : TransportError(what), rank_(rank) {}
  std::uint32_t rank() const { return rank_; }

 private:
  std::uint32_t rank_;
};

struct UcxOptions {
  // Detect dead peers: same-node ones by their process exit (shared memory stays), others by UCX's
  // failure handling (tcp or ib). Off: no detection at all; a dead peer hangs a wait until `timeout`.
  bool detect_peer_failure = true;
  // How long one wait may take before it is reported as a stall naming the peer.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // The devices UCX may use ("eth0", "mlx5_0:1", comma-separated), as UCX_NET_DEVICES; "": the
  // environment's, else UCX's own choice.
  std::string net_devices;
};

class UcxChannel {
 public:
  // One outstanding send or receive; it must be waited for before it is dropped.
  struct Request {
    std::uint32_t peer = 0;
    bool is_send = false;
    void* handle = nullptr;  // UCX request; nullptr once complete
    int status = 0;          // ucs_status_t
    std::size_t length = 0;
  };

  UcxChannel(Bootstrap& bootstrap, UcxOptions options = {});
  ~UcxChannel();
  UcxChannel(const UcxChannel&) = delete;
  UcxChannel& operator=(const UcxChannel&) = delete;

  std::uint32_t rank() const { return rank_; }
  std::uint32_t size() const { return size_; }
  const std::string& hostname_of(std::uint32_t rank) const { return hosts_.at(rank); }

  // Non-blocking: the buffer must stay untouched until wait() returns. Tags are per (peer, tag) pair;
  // messages with the same pair arrive in order.
  std::unique_ptr<Request> send(std::uint32_t peer, std::uint32_t tag, std::span<const std::byte> data);
  std::unique_ptr<Request> recv(std::uint32_t peer, std::uint32_t tag, std::span<std::byte> data);
  void wait(Request& request);
  // Non-blocking: whether the request has completed (then as wait() would have, errors included); a
  // request to a peer already known to be gone counts as completed, so it throws.
  bool test(Request& request);
  void wait_all(std::vector<std::unique_ptr<Request>>& requests);
  // Lets outstanding transfers move on without waiting (call it between pieces of other work).
  void progress();

  // Blocking conveniences.
  void send_blocking(std::uint32_t peer, std::uint32_t tag, std::span<const std::byte> data);
  void recv_blocking(std::uint32_t peer, std::uint32_t tag, std::span<std::byte> data);

  // Which UCX transports and devices the endpoint to `peer` uses, for reports ("tcp/eth0",
  // "rc_mlx5/mlx5_0:1,sysv/memory", ...).
  std::string transports_to(std::uint32_t peer);

 private:
  struct Ucx;
  void* endpoint(std::uint32_t peer);
  void check_peer(std::uint32_t peer, const char* what);
  bool watched(std::uint32_t peer) const;  // a same-node peer whose process this rank watches
  // Whether a watched peer's process is gone (recorded for check_peer), waiting at most `within`.
  bool peer_exited(std::uint32_t peer, std::chrono::milliseconds within = {});
  std::uint32_t rank_ = 0, size_ = 1;
  UcxOptions options_;
  std::vector<std::string> hosts_;
  std::unique_ptr<Ucx> ucx_;
};

}  // namespace cnet::transport
