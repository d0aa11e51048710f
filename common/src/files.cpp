#include "cnet/common/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
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

std::string temp_folder() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;
  fs::path ra = fs::weakly_canonical(fs::absolute(a), ec);
  if (ec) return false;
  fs::path rb = fs::weakly_canonical(fs::absolute(b), ec);
  return !ec && ra == rb;
}

namespace {

// A folder being emptied: its stream, its name in its parent, its entries as listed when it was opened.
struct OpenFolder {
  DIR* dir;
  std::string name;
  std::vector<std::string> children;
  std::size_t next = 0;
};

bool owned_by(const std::vector<uid_t>& owners, uid_t uid) { return std::find(owners.begin(), owners.end(), uid) != owners.end(); }

// Removes `name` in `parent` if it is not a folder (nothing if it is gone); opens it and lists it if it is.
std::optional<OpenFolder> unlink_or_open(int parent, const std::string& name, const std::string& shown, const std::vector<uid_t>& owners) {
  struct stat st {};
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw FileError(shown + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (!owned_by(owners, st.st_uid)) throw FileError(shown + " belongs to uid " + std::to_string(st.st_uid) + ", not to this job: left in place");
    if (unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) throw FileError(shown + ": cannot remove: " + std::strerror(errno));
    return std::nullopt;
  }
  int fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw FileError(shown + ": cannot open: " + std::strerror(errno));
  // The owner of what was opened, not of what the name showed a moment ago: it may have been swapped.
  if (fstat(fd, &st) != 0 || !owned_by(owners, st.st_uid)) {
    ::close(fd);
    throw FileError(shown + " belongs to uid " + std::to_string(st.st_uid) + ", not to this job: left in place");
  }
  DIR* dir = fdopendir(fd);
  if (!dir) {
    ::close(fd);
    throw FileError(shown + ": cannot list: " + std::strerror(errno));
  }
  OpenFolder folder{dir, name, {}};
  while (dirent* e = readdir(dir))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) folder.children.emplace_back(e->d_name);
  return folder;
}

// Depth first with a stack of open folders, not recursion: a tree a job made as deep as it likes costs
// one descriptor and one listing per level up to kMaxRemoveDepth, and anything deeper is left in place
// with an error naming it, never a stack overflow in a root daemon.
void remove_entry(int parent, const std::string& name, const std::string& shown, const std::vector<uid_t>& owners) {
  std::vector<OpenFolder> open;
  auto path_to = [&](const std::string& leaf) {  // built only when needed: an error, or a child to open
    std::string p = shown;
    for (std::size_t i = 1; i < open.size(); ++i) p += "/" + open[i].name;
    return open.empty() || leaf.empty() ? p : p + "/" + leaf;
  };
  try {
    if (auto top = unlink_or_open(parent, name, shown, owners)) open.push_back(std::move(*top));
    while (!open.empty()) {
      OpenFolder& here = open.back();
      if (here.next < here.children.size()) {
        const std::string& child = here.children[here.next++];
        if (open.size() >= kMaxRemoveDepth)
          throw FileError(path_to(child) + ": more than " + std::to_string(kMaxRemoveDepth) + " folders deep: left in place");
        if (auto sub = unlink_or_open(dirfd(here.dir), child, path_to(child), owners)) open.push_back(std::move(*sub));
        continue;
      }
      const std::string emptied = path_to("");
      std::string folder = here.name;
      closedir(here.dir);
      open.pop_back();
      int above = open.empty() ? parent : dirfd(open.back().dir);
      if (unlinkat(above, folder.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) throw FileError(emptied + ": cannot remove: " + std::strerror(errno));
    }
  } catch (...) {
    for (auto& f : open) closedir(f.dir);
    throw;
  }
}

}  // namespace

void remove_tree(const std::filesystem::path& path, const std::vector<uid_t>& owners) {
  std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..") throw FileError(path.string() + ": not a removable name");
  int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    throw FileError(parent.string() + ": cannot open: " + std::strerror(errno));
  }
  try {
    remove_entry(fd, name, path.string(), owners);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void remove_file_and_folder(const std::filesystem::path& folder, const std::string& file_name, uid_t owner) {
  const std::string name = folder.filename().string();
  if (name.empty() || name == "." || name == ".." || file_name.find('/') != std::string::npos) return;
  int parent = ::open(folder.has_parent_path() ? folder.parent_path().c_str() : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return;
  int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_uid == owner) {
    ::unlinkat(fd, file_name.c_str(), 0);
    // Only the folder just checked: if another was renamed in under its name since, it stays.
    struct stat now {};
    if (::fstatat(parent, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
      ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
  }
  if (fd >= 0) ::close(fd);
  ::close(parent);
}

}  // namespace cnet::common
