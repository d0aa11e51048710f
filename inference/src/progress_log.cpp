#include "cnet/inference/progress_log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <openssl/evp.h>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"

namespace cnet::inference {
namespace {

constexpr const char* kMagic = "cnet-run progress v1 ";

void write_all(int fd, const std::string& text, const std::string& path) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

// The lock that keeps a second run off the same output; held as long as the descriptor is open.
void lock(int fd, const std::string& path) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  int e = errno;
  ::close(fd);
  if (e == EWOULDBLOCK)
    throw std::runtime_error("another cnet-run is writing this output (" + path + " is locked); wait for it to end or choose another --output");
  throw std::runtime_error("cannot lock " + path + ": " + std::strerror(e));
}

}  // namespace

ProgressLog ProgressLog::start(const std::string& path, const std::string& identity) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write progress file " + path + ": " + std::strerror(errno));
  lock(fd, path);  // before the old records are dropped: a run still writing keeps them
  if (::ftruncate(fd, 0) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot reset " + path + ": " + std::strerror(errno));
  }
  ProgressLog log(fd, path);
  write_all(fd, kMagic + identity + "\n", path);
  log.sync();
  return log;
}

ProgressLog ProgressLog::resume(const std::string& path, const std::string& identity, std::uint32_t micro_batches) {
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) throw std::runtime_error("nothing to resume: " + path + " does not exist (run without --resume)");
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  lock(fd, path);
  ProgressLog log(fd, path);
  std::string text;
  try {
    text = common::read_file(path, 1u << 30);
  } catch (const common::FileError& e) {
    throw std::runtime_error(e.what());
  }
  std::size_t eol = text.find('\n');
  if (eol == std::string::npos || text.compare(0, std::strlen(kMagic), kMagic) != 0)
    throw std::runtime_error(path + " is not a cnet-run progress file");
  if (text.substr(std::strlen(kMagic), eol - std::strlen(kMagic)) != identity)
    throw std::runtime_error("cannot resume: " + path + " belongs to a run with another model, input or micro-batch size (run without --resume to start over)");
  std::size_t at = eol + 1, complete_until = at;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // torn last line: not recorded
    std::string line = text.substr(at, end - at);
    auto n = line.starts_with("done ") ? common::parse_unsigned(std::string_view(line).substr(5), 9) : std::nullopt;
    if (!n) throw std::runtime_error(path + ": unreadable line '" + common::printable(line, 64) + "' (run without --resume to start over)");
    if (*n >= micro_batches)
      throw std::runtime_error(path + ": records micro-batch " + std::to_string(*n) + " of a job of " + std::to_string(micro_batches) +
                               " (damaged, or another job's; run without --resume to start over)");
    log.done_.insert(*n);
    at = complete_until = end + 1;
  }
  // Drop a torn tail so the next record starts on its own line.
  if (complete_until < text.size() && ::ftruncate(fd, static_cast<off_t>(complete_until)) != 0)
    throw std::runtime_error("cannot repair " + path + ": " + std::strerror(errno));
  return log;
}

ProgressLog::ProgressLog(ProgressLog&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)), done_(std::move(o.done_)) { o.fd_ = -1; }

ProgressLog::~ProgressLog() {
  if (fd_ >= 0) ::close(fd_);
}

void ProgressLog::record(std::uint32_t micro_batch) {
  write_all(fd_, "done " + std::to_string(micro_batch) + "\n", path_);
  done_.insert(micro_batch);
}

void ProgressLog::sync() {
  if (::fsync(fd_) != 0) throw std::runtime_error("cannot sync " + path_ + ": " + std::strerror(errno));
}

std::string text_identity(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) throw std::runtime_error("cannot compute SHA-256 (OpenSSL)");
  std::ostringstream s;
  s << "sha256:" << std::hex << std::setfill('0');
  for (unsigned int i = 0; i < length; ++i) s << std::setw(2) << static_cast<unsigned>(digest[i]);
  s << "-" << std::dec << text.size();
  return s.str();
}

std::string file_identity(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sha(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!sha || EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1) {
    ::close(fd);
    throw std::runtime_error("cannot start SHA-256 (OpenSSL)");
  }
  std::vector<unsigned char> chunk(4u << 20);
  std::uint64_t size = 0;
  while (true) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string e = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("cannot read " + path + ": " + e);
    }
    if (n == 0) break;
    EVP_DigestUpdate(sha.get(), chunk.data(), static_cast<std::size_t>(n));
    size += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(sha.get(), digest, &length);
  std::ostringstream s;
  s << "sha256:" << std::hex << std::setfill('0');
  for (unsigned int i = 0; i < length; ++i) s << std::setw(2) << static_cast<unsigned>(digest[i]);
  s << "-" << std::dec << size;
  return s.str();
}

}  // namespace cnet::inference
