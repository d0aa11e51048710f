#include "cnet/common/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace cnet::common {
namespace {

std::string why(const std::filesystem::path& path, const std::string& what) {
  return path.string() + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

std::optional<std::string> read_file_if_exists(const std::filesystem::path& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw FileError(why(path, "cannot open"));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FileError(path.string() + ": not a regular file");
  }
  // /proc and /sys files report size 0 or 4096 whatever they hold: read to the end, up to the bound.
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string e = why(path, "cannot read");
      ::close(fd);
      throw FileError(e);
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      throw FileError(path.string() + ": larger than " + std::to_string(max_bytes) + " bytes; is it the right file?");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
  auto text = read_file_if_exists(path, max_bytes);
  if (!text) throw FileError(path.string() + ": does not exist");
  return *text;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text, mode_t mode) {
  std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(tmp.data());  // O_EXCL: a planted file or link of that name makes it pick another
  if (fd < 0) throw FileError(why(path, "cannot create a temporary file in " + dir.string()));
  auto fail = [&](const std::string& what) {
    std::string e = why(path, what);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw FileError(e);
  };
  if (fchmod(fd, mode) != 0) fail("cannot set permissions");
  for (std::size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0) fail("cannot sync");
  if (::close(fd) != 0) {
    std::string e = why(path, "cannot close");
    ::unlink(tmp.c_str());
    throw FileError(e);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string e = why(path, "cannot replace");
    ::unlink(tmp.c_str());
    throw FileError(e);
  }
}

}  // namespace cnet::common
