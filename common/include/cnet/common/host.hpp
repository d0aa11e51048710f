#pragma once
// This machine's name, as the kernel reports it, and the short form Slurm uses for node names.
#include <string>

namespace cnet::common {

std::string hostname();        // gethostname(), "" if it fails
std::string short_hostname();  // short_name(hostname()): how slurmd names this node by default
// "node7.cluster.example.org" -> "node7": up to the first '.', as slurmd does; an IPv4 address is kept.
std::string short_name(const std::string& host);

}  // namespace cnet::common
