#include "cnet/transport/tcp_bootstrap.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "cnet/common/host.hpp"

namespace cnet::transport {
namespace {

constexpr char kMagic[8] = {'C', 'N', 'E', 'T', 'B', 'S', '0', '1'};
constexpr std::uint64_t kMaxBlob = 1 << 20;
constexpr std::uint32_t kMaxKey = 256;
constexpr int kIoTimeoutMs = 10000;

class Refused : public BootstrapError {
 public:
  using BootstrapError::BootstrapError;
};

void write_all(int fd, const void* data, std::size_t len) {
  auto* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw BootstrapError(std::string("bootstrap connection lost while sending: ") + std::strerror(errno));
    p += n;
    len -= static_cast<std::size_t>(n);
  }
}

void read_all(int fd, void* data, std::size_t len) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, kIoTimeoutMs);
    if (ready == 0) throw Refused("peer sent nothing for 10 s");
    if (ready < 0 && errno == EINTR) continue;
    ssize_t n = recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw Refused("peer closed the connection");
    if (n < 0) throw BootstrapError(std::string("bootstrap read failed: ") + std::strerror(errno));
    p += n;
    len -= static_cast<std::size_t>(n);
  }
}

// Frame: magic, u32 key length, key, u64 blob length, blob (lengths little-endian on the wire as sent
// by the same code; both ends run cnet).
void send_frame(int fd, std::string_view key, std::span<const std::byte> blob) {
  std::uint32_t klen = static_cast<std::uint32_t>(key.size());
  std::uint64_t blen = blob.size();
  write_all(fd, kMagic, sizeof kMagic);
  write_all(fd, &klen, sizeof klen);
  write_all(fd, key.data(), key.size());
  write_all(fd, &blen, sizeof blen);
  write_all(fd, blob.data(), blob.size());
}

Blob receive_frame(int fd, std::string_view expected_key) {
  char magic[sizeof kMagic];
  read_all(fd, magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw Refused("not a cnet peer (bad greeting)");
  std::uint32_t klen = 0;
  read_all(fd, &klen, sizeof klen);
  if (klen > kMaxKey) throw Refused("frame key too long");
  std::string key(klen, '\0');
  read_all(fd, key.data(), klen);
  if (key != expected_key) throw Refused("peer is at step '" + key + "', expected '" + std::string(expected_key) + "'");
  std::uint64_t blen = 0;
  read_all(fd, &blen, sizeof blen);
  if (blen > kMaxBlob) throw Refused("frame larger than 1 MiB");
  Blob blob(blen);
  read_all(fd, blob.data(), blen);
  return blob;
}

std::string peer_name(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = "?";
  getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof addr, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

}  // namespace

TcpBootstrap::TcpBootstrap(int fd, std::uint32_t rank) : fd_(fd) {
  placement_.rank = rank;
  placement_.size = 2;
  placement_.local_size = 1;
  placement_.num_nodes = 2;
  placement_.node_id = rank;
  placement_.hostname = common::hostname();
  placement_.job_id = "tcp";
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

TcpBootstrap::~TcpBootstrap() { close(fd_); }

std::unique_ptr<TcpBootstrap> TcpBootstrap::serve(const std::string& bind_address, std::uint16_t port,
                                                  std::chrono::seconds wait,
                                                  const std::function<void(const std::string&)>& log) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(bind_address.empty() ? nullptr : bind_address.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw BootstrapError("cannot listen on " + bind_address + ": " + gai_strerror(rc));
  int listener = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listener < 0 || bind(listener, res->ai_addr, res->ai_addrlen) != 0 || listen(listener, 4) != 0) {
    std::string why = std::strerror(errno);
    freeaddrinfo(res);
    if (listener >= 0) close(listener);
    throw BootstrapError("cannot listen on port " + service + ": " + why + " (is another cnet-perf -s running?)");
  }
  freeaddrinfo(res);
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{listener, POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) == 0) {
      close(listener);
      throw BootstrapError("no client connected to port " + service + " within " + std::to_string(wait.count()) + " s");
    }
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    int fd = accept4(listener, reinterpret_cast<sockaddr*>(&addr), &alen, SOCK_CLOEXEC);
    if (fd < 0) continue;
    try {
      // The client speaks first: a greeting frame that proves it is a cnet peer.
      receive_frame(fd, "hello");
      send_frame(fd, "hello", {});
      close(listener);
      return std::unique_ptr<TcpBootstrap>(new TcpBootstrap(fd, 0));
    } catch (const BootstrapError& e) {
      log("rejected a connection from " + peer_name(addr) + ": " + e.what());
      close(fd);
    }
  }
}

std::unique_ptr<TcpBootstrap> TcpBootstrap::connect(const std::string& server, std::uint16_t port, std::chrono::seconds wait) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(server.c_str(), service.c_str(), &hints, &res); rc != 0)
    throw BootstrapError("cannot resolve server " + server + ": " + gai_strerror(rc));
  auto deadline = std::chrono::steady_clock::now() + wait;
  std::string last_error;
  while (std::chrono::steady_clock::now() < deadline) {  // the server may not be up yet
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      freeaddrinfo(res);
      try {
        send_frame(fd, "hello", {});
        receive_frame(fd, "hello");
      } catch (...) {
        close(fd);
        throw;
      }
      return std::unique_ptr<TcpBootstrap>(new TcpBootstrap(fd, 1));
    }
    last_error = std::strerror(errno);
    if (fd >= 0) close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  freeaddrinfo(res);
  throw BootstrapError("cannot reach cnet-perf -s on " + server + ":" + service + " (" + last_error + ")");
}

std::vector<Blob> TcpBootstrap::allgather(std::string_view key, std::span<const std::byte> mine) {
  send_frame(fd_, key, mine);
  Blob theirs = receive_frame(fd_, key);
  std::vector<Blob> all(2);
  all[placement_.rank] = Blob(mine.begin(), mine.end());
  all[1 - placement_.rank] = std::move(theirs);
  return all;
}

void TcpBootstrap::abort(int status, std::string_view message) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  close(fd_);
  std::_Exit(status == 0 ? 1 : status);
}

}  // namespace cnet::transport
