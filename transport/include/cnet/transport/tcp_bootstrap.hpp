#pragma once
// TcpBootstrap: a two-rank job wired over one TCP connection, for tools run by hand on two hosts without
// Slurm (cnet-perf -s / -c). The server is rank 0, the client rank 1. Before anything else (a UCX worker
// address above all) crosses, each side proves it knows the shared key: HMAC-SHA256 over both sides'
// random challenges. Every frame is checked (magic, lengths), every connection has one deadline for
// its whole introduction, so a stray, slow or forged connection is turned away, reported, and the
// server goes on waiting for the real peer.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cnet/transport/bootstrap.hpp"

namespace cnet::transport {

class TcpBootstrap final : public Bootstrap {
 public:
  // Listens on bind_address:port until a peer that knows `key` connects (or `wait` passes); others are
  // rejected and reported through `log` (their text escaped), and listening goes on.
  static std::unique_ptr<TcpBootstrap> serve(const std::string& bind_address, std::uint16_t port, std::chrono::seconds wait,
                                             const std::string& key, const std::function<void(const std::string&)>& log);
  static std::unique_ptr<TcpBootstrap> connect(const std::string& server, std::uint16_t port, std::chrono::seconds wait,
                                               const std::string& key);
  ~TcpBootstrap() override;

  const Placement& placement() const override { return placement_; }
  std::vector<Blob> allgather(std::string_view key, std::span<const std::byte> mine) override;
  [[noreturn]] void abort(int status, std::string_view message) override;

  // How long one connection may take to introduce itself before it is turned away.
  static constexpr std::chrono::seconds kIntroductionDeadline{5};
  // The server's half of the introduction on an accepted connection: throws BootstrapError when the
  // peer is not a cnet-perf client that knows `key`. (serve() runs it; fuzzers feed it bytes.)
  static void introduce_client(int fd, const std::string& key, std::chrono::steady_clock::time_point deadline);

 private:
  TcpBootstrap(int fd, std::uint32_t rank);
  int fd_;
  Placement placement_;
};

// A random key for a server started without one: 32 hex digits, for the client's CNET_PERF_KEY.
std::string random_key();

}  // namespace cnet::transport
