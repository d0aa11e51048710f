#pragma once
// Comma (or other) separated lists, as Slurm and the environment spell them: join and split.
#include <string>
#include <vector>

namespace cnet::scheduling {

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// "a,,b," -> {"a", "b"}: empty items are dropped.
inline std::vector<std::string> split(const std::string& text, char sep = ',') {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace cnet::scheduling
