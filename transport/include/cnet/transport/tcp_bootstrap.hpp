#pragma once
// TcpBootstrap: a two-rank job wired over one TCP connection, for tools run by hand on two hosts without
// Slurm (cnet-perf -s / -c). The server is rank 0, the client rank 1. Every frame is checked (magic,
// lengths, a read deadline), so a stray connection or garbage on the port is turned away, not trusted.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cnet/transport/bootstrap.hpp"

namespace cnet::transport {

class TcpBootstrap final : public Bootstrap {
 public:
  // Listens on bind_address:port until a cnet peer connects (or `wait` passes); connections that do not
  // speak the protocol are rejected and reported through `log`, and listening goes on.
  static std::unique_ptr<TcpBootstrap> serve(const std::string& bind_address, std::uint16_t port, std::chrono::seconds wait,
                                             const std::function<void(const std::string&)>& log);
  static std::unique_ptr<TcpBootstrap> connect(const std::string& server, std::uint16_t port, std::chrono::seconds wait);
  ~TcpBootstrap() override;

  const Placement& placement() const override { return placement_; }
  std::vector<Blob> allgather(std::string_view key, std::span<const std::byte> mine) override;
  [[noreturn]] void abort(int status, std::string_view message) override;

 private:
  TcpBootstrap(int fd, std::uint32_t rank);
  int fd_;
  Placement placement_;
};

}  // namespace cnet::transport
