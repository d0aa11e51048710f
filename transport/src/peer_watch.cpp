#include "cnet/transport/peer_watch.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <utility>

#include "cnet/common/text.hpp"

namespace cnet::transport {
namespace {

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Field 22 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses, so fields
// are counted from the last ')'.
std::string start_time(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  std::getline(in, stat);
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return field;
  return "";
}

}  // namespace

std::string process_identity() {
  std::string pid = std::to_string(getpid());
  return boot_id() + " " + pid + " " + start_time(pid);
}

std::optional<PeerWatch> PeerWatch::open(const std::string& identity) {
  auto parts = common::split(identity, ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[0] != boot_id()) return std::nullopt;
  auto pid = common::parse_unsigned(parts[1]);
  if (!pid || *pid == 0 || parts[2].empty()) return std::nullopt;
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(*pid), 0));
  if (fd < 0) return std::nullopt;
  // Checked after opening: a pidfd pins the process it was opened on, so a match now cannot be a
  // pid that was reused in between.
  if (start_time(parts[1]) != parts[2]) {
    close(fd);
    return std::nullopt;
  }
  return PeerWatch(fd);
#else
  return std::nullopt;
#endif
}

PeerWatch::PeerWatch(PeerWatch&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

PeerWatch& PeerWatch::operator=(PeerWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

PeerWatch::~PeerWatch() {
  if (fd_ >= 0) close(fd_);
}

bool PeerWatch::exited(std::chrono::milliseconds within) const {
  pollfd p{fd_, POLLIN, 0};
  int rc;
  while ((rc = poll(&p, 1, static_cast<int>(within.count()))) < 0 && errno == EINTR) {
  }
  return rc > 0;  // a pidfd is readable once its process has exited
}

}  // namespace cnet::transport
