#include <algorithm>
#include <cctype>
#include <cmath>

#include "cnet/topology/emit.hpp"

namespace cnet::topology {

std::string gres_type(const std::string& model) {
  // Slurm matches Type against the NVML name lowercased with spaces turned into '_'; anything else
  // that could break a Gres=gpu:TYPE:N spec or a feature name becomes '_' too.
  std::string out;
  for (unsigned char c : model) {
    char lower = static_cast<char>(std::tolower(c));
    out += std::isalnum(c) || lower == '-' || lower == '.' ? lower : '_';
  }
  return out;
}

std::string memory_class(std::uint64_t bytes) {
  if (bytes == 0) return "";
  // Drivers report a little less than the marketed size (V100 32 GB: 32510 MiB); snap to the marketed one.
  static const unsigned marketed[] = {8, 12, 16, 24, 32, 40, 48, 64, 80, 94, 96, 120, 128, 141, 144, 180, 192, 288};
  double gib = static_cast<double>(bytes) / (1ull << 30);
  unsigned best = static_cast<unsigned>(std::ceil(gib - 0.01));
  for (unsigned m : marketed)
    if (gib <= m && gib >= m * 0.92) { best = m; break; }
  return "gpumem" + std::to_string(best) + "g";
}

std::string fabric_feature(const Nic& nic) {
  std::string kind = to_string(nic.kind);
  return nic.rate_gbps ? kind + std::to_string(nic.rate_gbps) : kind;
}

std::string compress_ranges(const std::vector<unsigned>& input) {
  std::vector<unsigned> v = input;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace cnet::topology
