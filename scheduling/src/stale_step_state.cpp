#include "cnet/scheduling/stale_step_state.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "cnet/common/files.hpp"

namespace cnet::scheduling {
namespace fs = std::filesystem;

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// A socket file nobody listens on refuses connections: that is how a dead server's socket looks.
bool someone_listens(const fs::path& socket_path) {
  sockaddr_un addr{};
  if (socket_path.native().size() >= sizeof addr.sun_path) return true;  // cannot tell: leave it alone
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket_path.c_str());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  bool answered = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno != ECONNREFUSED;
  close(fd);
  return answered;
}

}  // namespace

PmixStepPaths pmix_step_paths(std::string spool_dir, const std::string& tmp_fs, const std::string& node_name,
                              const std::string& host_name, uid_t uid, std::uint32_t job, std::uint32_t step) {
  // A node name is one path component: anything else ('..', a '/', nothing) is not what slurmd used.
  bool one_component = !node_name.empty() && node_name.size() <= 255 && !node_name.starts_with('.') &&
                       node_name.find_first_of("/\n") == std::string::npos;
  replace_all(spool_dir, "%n", one_component ? node_name : host_name);
  replace_all(spool_dir, "%h", host_name);
  std::string id = std::to_string(job) + "." + std::to_string(step);
  return {fs::path(spool_dir) / ("stepd.slurm.pmix." + id), fs::path(spool_dir) / ("pmix." + id),
          fs::path(tmp_fs.empty() ? "/tmp" : tmp_fs) / ("spmix_appdir_" + std::to_string(uid) + "_" + id)};
}

std::vector<fs::path> remove_stale_pmix_state(const PmixStepPaths& paths, uid_t job_uid) {
  std::error_code ec;
  if (fs::is_socket(fs::symlink_status(paths.server_socket, ec)) && someone_listens(paths.server_socket)) return {};
  std::vector<fs::path> removed;
  for (const auto& p : {paths.server_socket, paths.server_dir, paths.client_dir}) {
    if (!fs::exists(fs::symlink_status(p, ec))) continue;
    // As root in a world-writable TmpFS: only what the job's user or root made, never through a link.
    try {
      common::remove_tree(p, {job_uid, 0});
    } catch (const common::FileError& e) {
      throw std::runtime_error(std::string("not removing what an earlier run of this step left: ") + e.what());
    }
    removed.push_back(p);
  }
  return removed;
}

}  // namespace cnet::scheduling
