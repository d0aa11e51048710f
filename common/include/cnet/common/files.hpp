#pragma once
// Whole-file reads and atomic whole-file writes, done one way everywhere. Reads refuse what is not a
// regular file (a FIFO or a device would block or never end) and anything over a size bound; writes
// go to a fresh private temporary file in the target's folder (mkstemp: no predictable name to plant
// a link on), get their mode with fchmod, reach the disk, and are renamed over the target, so a reader
// sees the old file or the new one and never half of one.

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnet::common {

class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr std::size_t kDefaultReadLimit = 64u << 20;

// The file's bytes; throws FileError naming the path and the reason (missing, not a regular file,
// larger than max_bytes, unreadable).
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes = kDefaultReadLimit);
// The same, but nullopt when the file does not exist.
std::optional<std::string> read_file_if_exists(const std::filesystem::path& path, std::size_t max_bytes = kDefaultReadLimit);

// Replaces `path` with `text` atomically, with permissions `mode`. A symlink at `path` is replaced,
// never followed. Throws FileError naming the path; the temporary file never outlives a failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view text, mode_t mode = 0644);

// Whether two paths name one file: the same inode (another name, a hard or symbolic link), or, where one
// is not there yet, the same path once resolved.
bool same_file(const std::string& a, const std::string& b);

// Where scratch files go: $TMPDIR when set (Slurm gives a job its own), else /tmp. Not checked: the
// caller's error names it, with "set TMPDIR to a writable folder".
std::string temp_folder();

// Removes `path` and everything below it as root may safely do in a world-writable folder: walked with
// openat/unlinkat from each parent's descriptor, never following a symbolic link (a link is removed as
// a link), and only entries owned by one of `owners`; an entry of another owner stops the removal with
// FileError naming it and its owner (what was already removed stays removed, nothing below it is touched).
// A missing `path` is nothing to do. A tree deeper than kMaxRemoveDepth folders is removed down to that
// depth at most, and FileError names what was left in place (a job can build any depth).
constexpr std::size_t kMaxRemoveDepth = 256;
void remove_tree(const std::filesystem::path& path, const std::vector<uid_t>& owners);

// Removes `folder/file_name` and then `folder` if it is empty, as root may do in a user's folder: only when
// `folder` itself (not a link to one) belongs to `owner`; the file and the folder are unlinked from
// descriptors, so a folder swapped for a link, or another folder swapped in after the check, is not what
// goes. Quietly does nothing where any of that does not hold (it is clean-up: nothing to report).
void remove_file_and_folder(const std::filesystem::path& folder, const std::string& file_name, uid_t owner);

}  // namespace cnet::common
