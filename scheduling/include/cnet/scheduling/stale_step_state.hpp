#pragma once
// What an earlier run of the same job step left on this node. A requeued job keeps its id and numbers
// its steps from 0 again; when its node died under the first run (power loss, slurmd killed), Slurm
// 22.05's mpi/pmix finds its own leftovers from then and neither reuses nor removes them, so the
// step fails to launch ("Cannot bind() UNIX socket ... Address already in use"). The SPANK plugin
// clears them in slurmstepd before mpi/pmix sets up the step.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cnet::scheduling {

struct PmixStepPaths {
  std::filesystem::path server_socket;  // <SlurmdSpoolDir>/stepd.slurm.pmix.JOB.STEP
  std::filesystem::path server_dir;     // <SlurmdSpoolDir>/pmix.JOB.STEP
  std::filesystem::path client_dir;     // <TmpFS>/spmix_appdir_UID_JOB.STEP
};

// The paths mpi/pmix uses for one step; %n in spool_dir becomes the NodeName and %h the host name, as
// slurmd expands them. A node name that is not one plain path component ('..', 'a/b', empty) is taken
// as the host name: root removes what these paths name.
PmixStepPaths pmix_step_paths(std::string spool_dir, const std::string& tmp_fs, const std::string& node_name,
                              const std::string& host_name, uid_t uid, std::uint32_t job, std::uint32_t step);

// Removes the step's leftovers unless a live server still answers on its socket (then nothing is
// touched): only what `job_uid` or root owns, never following a link (common::remove_tree), since the
// client folder's name is one any local user can create first. Returns what it removed; throws
// std::runtime_error naming the path it could not or would not remove.
std::vector<std::filesystem::path> remove_stale_pmix_state(const PmixStepPaths& paths, uid_t job_uid);

}  // namespace cnet::scheduling
