#pragma once
// Binding a task to the cores of its GPU without ever widening what Slurm gave it: the SPANK plugin and
// cnet-launch both bind through here, so a task confined by a cpuset or --cpu-bind stays inside it.

#include <string>
#include <vector>

namespace cnet::scheduling {

// The CPUs of `wanted` that are also in `allowed`, in order; empty when none of them is.
std::vector<unsigned> bindable_cpus(const std::vector<unsigned>& wanted, const std::vector<unsigned>& allowed);

// This process's affinity mask (sched_getaffinity); empty if it cannot be read.
std::vector<unsigned> allowed_cpus();

// Binds this process to the CPUs of `wanted` it is allowed to use. Returns "" when bound, else why
// nothing was changed (none of them is allowed, or the kernel refused).
std::string bind_within_allowed(const std::vector<unsigned>& wanted);

}  // namespace cnet::scheduling
