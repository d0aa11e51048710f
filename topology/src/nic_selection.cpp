#include "cnet/topology/nic_selection.hpp"

#include <algorithm>

#include "cnet/common/text.hpp"

namespace cnet::topology {

NicSelection NicSelection::parse(std::string_view value, bool prefixes) {
  const std::string text = common::trim(value);
  std::string_view v = text;
  Rule rule;
  rule.exact = !prefixes;
  if (v.starts_with('^')) rule.exclude = true, v.remove_prefix(1);
  if (prefixes && v.starts_with('=')) rule.exact = true, v.remove_prefix(1);
  for (const auto& item : common::split(v)) {
    std::string name(common::trim(item.substr(0, item.find(':'))));
    if (!name.empty()) rule.names.push_back(name);
  }
  NicSelection s;
  // "^" with nothing after it excludes nothing: every NIC, as if unset. An empty list names none.
  if (!rule.names.empty()) s.rules_.push_back(std::move(rule));
  return s;
}

NicSelection NicSelection::from_nccl(std::string_view value) { return parse(value, true); }

NicSelection NicSelection::from_ucx(std::string_view value) {
  if (common::trim(value) == "all") return {};
  return parse(value, false);
}

NicSelection NicSelection::exactly(const std::vector<std::string>& names) {
  NicSelection s;
  if (!names.empty()) s.rules_.push_back(Rule{names, true, false});
  return s;
}

void NicSelection::add(const NicSelection& other) { rules_.insert(rules_.end(), other.rules_.begin(), other.rules_.end()); }

bool NicSelection::Rule::lists(std::string_view name) const {
  return !name.empty() && std::any_of(names.begin(), names.end(), [&](const std::string& n) { return exact ? name == n : name.starts_with(n); });
}

bool NicSelection::selects(std::string_view name) const {
  return std::any_of(rules_.begin(), rules_.end(), [&](const Rule& r) { return r.lists(name) != r.exclude; });
}

bool NicSelection::selects(const Nic& nic) const {
  // Listed under any of its names is listed: an excluded netdev excludes its RDMA device too.
  return std::any_of(rules_.begin(), rules_.end(), [&](const Rule& r) {
    return (r.lists(nic.name) || r.lists(nic.netdev) || r.lists(nic.rdma_device)) != r.exclude;
  });
}

}  // namespace cnet::topology
