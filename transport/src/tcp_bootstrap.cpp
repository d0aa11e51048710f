#include "cnet/transport/tcp_bootstrap.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "cnet/common/host.hpp"
#include "cnet/common/text.hpp"

namespace cnet::transport {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[8] = {'C', 'N', 'E', 'T', 'B', 'S', '0', '2'};
constexpr std::uint64_t kMaxBlob = 1 << 20;
constexpr std::uint32_t kMaxKey = 256;
constexpr auto kFrameDeadline = std::chrono::seconds(10);  // one frame once the peer is known
constexpr std::size_t kNonce = 32;
using Mac = std::array<unsigned char, 32>;

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

// Reads `len` bytes before `deadline`: a peer trickling one byte at a time cannot hold the line open.
void read_all(int fd, void* data, std::size_t len, Clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (len > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw Refused("peer did not finish its message in time");
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left));
    if (ready == 0) throw Refused("peer did not finish its message in time");
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

Blob receive_frame(int fd, std::string_view expected_key, Clock::time_point deadline) {
  char magic[sizeof kMagic];
  read_all(fd, magic, sizeof magic, deadline);
  if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw Refused("not a cnet peer of this version (bad greeting)");
  std::uint32_t klen = 0;
  read_all(fd, &klen, sizeof klen, deadline);
  if (klen > kMaxKey) throw Refused("frame key too long");
  std::string key(klen, '\0');
  read_all(fd, key.data(), klen, deadline);
  if (key != expected_key)
    throw Refused("peer is at step '" + common::printable(key, 64) + "', expected '" + std::string(expected_key) + "'");
  std::uint64_t blen = 0;
  read_all(fd, &blen, sizeof blen, deadline);
  if (blen > kMaxBlob) throw Refused("frame larger than 1 MiB");
  Blob blob(blen);
  read_all(fd, blob.data(), blen, deadline);
  return blob;
}

Blob random_bytes(std::size_t n) {
  Blob out(n);
  for (std::size_t done = 0; done < n;) {
    ssize_t got = getrandom(out.data() + done, n - done, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw BootstrapError(std::string("no random bytes: ") + std::strerror(errno));
    done += static_cast<std::size_t>(got);
  }
  return out;
}

// HMAC-SHA256(key, label || a || b): which side, and both challenges, so no answer can be replayed.
Mac mac(const std::string& key, const char* label, const Blob& a, const Blob& b) {
  Blob msg(reinterpret_cast<const std::byte*>(label), reinterpret_cast<const std::byte*>(label) + std::strlen(label));
  msg.insert(msg.end(), a.begin(), a.end());
  msg.insert(msg.end(), b.begin(), b.end());
  Mac out{};
  unsigned len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out.data(), &len) ||
      len != out.size())
    throw BootstrapError("HMAC-SHA256 failed");
  return out;
}

bool same_mac(const Mac& want, const Blob& got) {
  return got.size() == want.size() && CRYPTO_memcmp(want.data(), got.data(), want.size()) == 0;
}

Blob as_blob(const Mac& m) { return Blob(reinterpret_cast<const std::byte*>(m.data()), reinterpret_cast<const std::byte*>(m.data()) + m.size()); }

// The client's half.
void introduce_to_server(int fd, const std::string& key, Clock::time_point deadline) {
  Blob ns = receive_frame(fd, "challenge", deadline);
  if (ns.size() != kNonce) throw BootstrapError("the server sent a challenge of the wrong size: not cnet-perf -s?");
  Blob nc = random_bytes(kNonce);
  Blob answer = nc;
  auto proof = mac(key, "cnet-perf client", ns, nc);
  answer.insert(answer.end(), reinterpret_cast<const std::byte*>(proof.data()), reinterpret_cast<const std::byte*>(proof.data()) + proof.size());
  send_frame(fd, "answer", answer);
  Blob welcome;
  try {
    welcome = receive_frame(fd, "welcome", deadline);
  } catch (const BootstrapError&) {
    throw BootstrapError("the server did not accept this key: give both sides the same CNET_PERF_KEY or --key-file");
  }
  if (!same_mac(mac(key, "cnet-perf server", nc, ns), welcome))
    throw BootstrapError("the server could not prove it knows the key: is something else listening on that port?");
}

std::string peer_name(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = "?";
  getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof addr, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

}  // namespace

// The server's half: challenge, check the client's answer, prove knowing the key itself.
void TcpBootstrap::introduce_client(int fd, const std::string& key, std::chrono::steady_clock::time_point deadline) {
  Blob ns = random_bytes(kNonce);
  send_frame(fd, "challenge", ns);
  Blob answer = receive_frame(fd, "answer", deadline);
  if (answer.size() != kNonce + 32) throw Refused("answer of the wrong size");
  Blob nc(answer.begin(), answer.begin() + kNonce), proof(answer.begin() + kNonce, answer.end());
  if (!same_mac(mac(key, "cnet-perf client", ns, nc), proof)) throw Refused("it does not know the key (CNET_PERF_KEY / --key-file)");
  send_frame(fd, "welcome", as_blob(mac(key, "cnet-perf server", nc, ns)));
}

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

std::string random_key() {
  std::string hex;
  char buf[3];
  for (std::byte b : random_bytes(16)) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>(b));
    hex += buf;
  }
  return hex;
}

std::unique_ptr<TcpBootstrap> TcpBootstrap::serve(const std::string& bind_address, std::uint16_t port,
                                                  std::chrono::seconds wait, const std::string& key,
                                                  const std::function<void(const std::string&)>& log) {
  if (key.empty()) throw BootstrapError("no key to authenticate the client with");
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
      introduce_client(fd, key, std::min(deadline, Clock::now() + kIntroductionDeadline));
      close(listener);
      return std::unique_ptr<TcpBootstrap>(new TcpBootstrap(fd, 0));
    } catch (const BootstrapError& e) {
      log("rejected a connection from " + common::printable(peer_name(addr), 64) + ": " + e.what());
      close(fd);
    }
  }
}

std::unique_ptr<TcpBootstrap> TcpBootstrap::connect(const std::string& server, std::uint16_t port, std::chrono::seconds wait,
                                                    const std::string& key) {
  if (key.empty()) throw BootstrapError("no key: set CNET_PERF_KEY or --key-file to the key the server was given (it prints one when it has none)");
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
        introduce_to_server(fd, key, Clock::now() + kIntroductionDeadline);
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
  Blob theirs = receive_frame(fd_, key, Clock::now() + kFrameDeadline);
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
