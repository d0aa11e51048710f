#pragma once
// This machine's name, as the kernel reports it.
#include <string>

namespace cnet::common {

std::string hostname();        // gethostname(), "" if it fails
std::string short_hostname();  // up to the first '.', as slurmd names a node by default

}  // namespace cnet::common
