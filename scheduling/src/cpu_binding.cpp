#include "cnet/scheduling/cpu_binding.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cnet/common/text.hpp"

namespace cnet::scheduling {

std::vector<unsigned> bindable_cpus(const std::vector<unsigned>& wanted, const std::vector<unsigned>& allowed) {
  std::vector<unsigned> out;
  for (unsigned c : wanted)
    if (std::find(allowed.begin(), allowed.end(), c) != allowed.end() && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(c);
  return out;
}

std::vector<unsigned> allowed_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return {};
  std::vector<unsigned> out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) out.push_back(c);
  return out;
}

std::string bind_within_allowed(const std::vector<unsigned>& wanted) {
  auto allowed = allowed_cpus();
  auto cpus = bindable_cpus(wanted, allowed);
  if (cpus.empty())
    return "none of the GPU's cores (" + common::compress_ranges(wanted) + ") are among this task's allowed CPUs (" +
           common::compress_ranges(allowed) + "); binding left as is";
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (unsigned c : cpus)
    if (c < CPU_SETSIZE) CPU_SET(c, &mask);
  if (sched_setaffinity(0, sizeof mask, &mask) != 0)
    return "cannot bind to CPUs " + common::compress_ranges(cpus) + ": " + std::strerror(errno);
  return "";
}

}  // namespace cnet::scheduling
