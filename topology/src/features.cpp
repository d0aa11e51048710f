#include "cnet/topology/features.hpp"

#include <cctype>
#include <cmath>

#include "cnet/common/text.hpp"

namespace cnet::topology {
namespace {

constexpr unsigned kMemoryClasses[] = {8, 12, 16, 24, 32, 40, 48, 64, 80, 94, 96, 120, 128, 141, 144, 180, 192, 288};
constexpr unsigned kIbRates[] = {10, 20, 40, 56, 100, 200, 400, 800};
constexpr unsigned kEthRates[] = {1, 10, 25, 40, 50, 100, 200, 400, 800};

}  // namespace

std::span<const unsigned> gpu_memory_classes_gb() { return kMemoryClasses; }

std::span<const unsigned> fabric_rates_gbps(NicKind kind) {
  return kind == NicKind::ib ? std::span<const unsigned>(kIbRates) : std::span<const unsigned>(kEthRates);
}

std::string gres_type(const std::string& model) {
  std::string out;
  for (unsigned char c : model) {
    char lower = static_cast<char>(std::tolower(c));
    out += std::isalnum(c) || lower == '-' || lower == '.' ? lower : '_';
  }
  return out;
}

std::string memory_class(std::uint64_t bytes) {
  if (bytes == 0) return "";
  double gib = static_cast<double>(bytes) / (1ull << 30);
  unsigned best = static_cast<unsigned>(std::ceil(gib - 0.01));
  for (unsigned m : kMemoryClasses)
    if (gib <= m && gib >= m * 0.92) {
      best = m;
      break;
    }
  return memory_class_feature(best);
}

std::string memory_class_feature(unsigned gb) { return "gpumem" + std::to_string(gb) + "g"; }

std::optional<unsigned> parse_memory_class(std::string_view f) {
  if (!f.starts_with("gpumem") || !f.ends_with("g")) return std::nullopt;
  return common::parse_unsigned(f.substr(6, f.size() - 7), 6);
}

std::string fabric_feature(NicKind kind, unsigned rate_gbps) {
  std::string name = to_string(kind);
  return rate_gbps ? name + std::to_string(rate_gbps) : name;
}

std::string fabric_feature(const Nic& nic) { return fabric_feature(nic.kind, nic.rate_gbps); }

std::optional<FabricFeature> parse_fabric_feature(std::string_view f) {
  for (NicKind kind : {NicKind::ib, NicKind::roce, NicKind::eth}) {
    std::string_view name = to_string(kind);
    if (!f.starts_with(name)) continue;
    if (auto rate = common::parse_unsigned(f.substr(name.size()), 6)) return FabricFeature{kind, *rate};
  }
  return std::nullopt;
}

}  // namespace cnet::topology
