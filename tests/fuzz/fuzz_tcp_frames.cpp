// What a peer sends cnet-perf -s before it is trusted: any bytes are turned away with BootstrapError
// (or, only with the key, accepted), never a crash or an unbounded read.
#include <sys/socket.h>
#include <unistd.h>

#include "cnet/transport/tcp_bootstrap.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) return 0;  // the socket buffer holds what the peer sends; more would need a reader
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  int big = 1 << 20;
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  if (size && write(fds[1], data, size) < 0) {
  }
  shutdown(fds[1], SHUT_WR);
  try {
    cnet::transport::TcpBootstrap::introduce_client(fds[0], "fuzz-key-0123456789",
                                                    std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  } catch (const cnet::transport::BootstrapError&) {
  }
  close(fds[0]);
  close(fds[1]);
  return 0;
}
