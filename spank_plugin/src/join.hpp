#pragma once
// "a, b, c" from {"a", "b", "c"}: shared by the template catalogue and the task environment plan.
#include <string>
#include <vector>

namespace cnet::scheduling {

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

}  // namespace cnet::scheduling
