#include "cnet/topology/features.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <vector>

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

namespace {

// Lowercased, with anything that could break a Gres=gpu:TYPE:N spec turned into '_' (spaces too, as
// Slurm's NVML autodetect does).
std::string type_characters(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    char lower = static_cast<char>(std::tolower(c));
    out += std::isalnum(c) || lower == '-' || lower == '.' ? lower : '_';
  }
  return out;
}

bool is_hex_id(const std::string& word) {
  return word.size() == 4 && std::all_of(word.begin(), word.end(), [](unsigned char c) { return std::isxdigit(c); });
}

}  // namespace

std::string gres_type(const std::string& model) {
  static const std::set<std::string> brands = {"nvidia", "tesla", "amd", "instinct", "radeon", "geforce", "quadro", "intel", "data", "center", "gpu"};
  // A family word that names nothing alone: "RTX A6000", "Max 1550", "Pro W7900".
  static const std::set<std::string> two_word = {"rtx", "titan", "max", "pro", "flex"};
  std::vector<std::string> words;
  std::istringstream in(type_characters(model));
  for (std::string w; std::getline(in, w, '_');)
    if (!w.empty() && (!words.empty() || !brands.count(w))) words.push_back(w);
  auto family = [](const std::string& w) { return w.substr(0, w.find('-')); };
  // Without a model name only the PCI ids are known ("NVIDIA 06d2"): keep the vendor with them.
  if (words.empty() || family(words[0]).empty() || (words.size() == 1 && is_hex_id(words[0]))) return type_characters(model);
  std::string type = family(words[0]);
  if (two_word.count(type) && words.size() > 1 && words[0].find('-') == std::string::npos) type += "_" + family(words[1]);
  return type;
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
