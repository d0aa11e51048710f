#include "cnet/launcher/progress_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace cnet::launcher {
namespace {

constexpr const char* kMagic = "cnet-run progress v1 ";

void write_all(int fd, const std::string& text, const std::string& path) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace

ProgressLog ProgressLog::start(const std::string& path, const std::string& identity) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write progress file " + path + ": " + std::strerror(errno));
  ProgressLog log(fd, path);
  write_all(fd, kMagic + identity + "\n", path);
  log.sync();
  return log;
}

ProgressLog ProgressLog::resume(const std::string& path, const std::string& identity) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("nothing to resume: " + path + " does not exist (run without --resume)");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t eol = text.find('\n');
  if (eol == std::string::npos || text.compare(0, std::strlen(kMagic), kMagic) != 0)
    throw std::runtime_error(path + " is not a cnet-run progress file");
  if (text.substr(std::strlen(kMagic), eol - std::strlen(kMagic)) != identity)
    throw std::runtime_error("cannot resume: " + path + " belongs to a run with another model, input or micro-batch size (run without --resume to start over)");
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot append to " + path + ": " + std::strerror(errno));
  ProgressLog log(fd, path);
  std::size_t at = eol + 1, complete_until = at;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // torn last line: not recorded
    std::string line = text.substr(at, end - at);
    unsigned long n = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "done %lu%c", &n, &tail) != 1)
      throw std::runtime_error(path + ": unreadable line '" + line + "' (run without --resume to start over)");
    log.done_.insert(static_cast<std::uint32_t>(n));
    at = complete_until = end + 1;
  }
  // Drop a torn tail so the next record starts on its own line.
  if (complete_until < text.size() && ::truncate(path.c_str(), static_cast<off_t>(complete_until)) != 0)
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

std::string file_identity(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<char> head(1 << 16);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  in.clear();
  in.seekg(0, std::ios::end);
  std::uint64_t h = 1469598103934665603ull;
  for (char c : head) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::ostringstream s;
  s << std::hex << h << "-" << std::dec << static_cast<long long>(in.tellg());
  return s.str();
}

}  // namespace cnet::launcher
