#include "cnet/scheduling/template_expansion.hpp"

#include <algorithm>

#include "cnet/common/text.hpp"

namespace cnet::scheduling {
namespace {

using common::join;
using common::split;

// "gres:gpu:a100:2" (Slurm 22.05) or "gres/gpu:a100:2" (23.02 and later) -> "gpu:a100:2".
std::string without_gres_prefix(const std::string& entry) {
  return entry.rfind("gres:", 0) == 0 || entry.rfind("gres/", 0) == 0 ? entry.substr(5) : entry;
}

// "gres/gpu:a100:2" -> "gpu".
std::string gres_name(const std::string& entry) {
  auto parts = split(without_gres_prefix(entry), ':');
  return parts.empty() ? "" : parts[0];
}

struct Checker {
  const ResourceTemplate& t;
  bool modify;
  Expansion out;
  // The template sets `what` to `want`; the user asked for `have` (nullopt: not at all).
  template <typename T>
  bool conflicts(const std::optional<T>& have, const T& want, const std::string& user_flag, const std::string& template_key) {
    if (!have || *have == want) return false;
    // The user's own text goes to slurmctld's log and back to the user: escaped, like the template name.
    const std::string asked = common::printable(user_flag, 128);
    if (t.allow_override) {
      out.notes.push_back("user's " + asked + " overrides template " + t.name);
      return false;
    }
    if (out.error.empty())
      out.error = "template '" + t.name + "' sets " + template_key + " but the job asks for " + asked +
                  "; drop one of them (or ask your admin for AllowOverride=yes in " + t.name + ")";
    return true;
  }
};

bool balanced(const std::string& expression) {
  int depth = 0;
  for (char c : expression) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth == 0;
}

std::string time_text(std::uint32_t minutes) {
  return std::to_string(minutes / 60) + ":" + (minutes % 60 < 10 ? "0" : "") + std::to_string(minutes % 60) + ":00";
}

}  // namespace

std::optional<std::string> constraint_within(const std::string& constraint, const std::set<std::string>& known, std::string& missing) {
  std::vector<std::string> terms;
  for (const auto& term : split(constraint, '&')) {
    bool group = term.size() > 1 && term.front() == '(' && term.back() == ')';
    std::vector<std::string> kept;
    for (const auto& alt : split(group ? term.substr(1, term.size() - 2) : term, '|'))
      if (known.count(alt)) kept.push_back(alt);
    if (kept.empty()) {
      missing = term;
      return std::nullopt;
    }
    terms.push_back(kept.size() == 1 ? kept[0] : "(" + join(kept, "|") + ")");
  }
  return join(terms, "&");
}

Expansion expand_template(const ResourceTemplate& t, const JobRequest& user, bool modify, const std::set<std::string>* cluster_features) {
  Checker c{t, modify, {}};
  Expansion& out = c.out;

  // gres: each gres the template names must be absent from the request or equal to it.
  if (auto gres = t.gres_per_node(); !gres.empty()) {
    std::vector<std::string> have = user.tres_per_node ? split(*user.tres_per_node, ',') : std::vector<std::string>{};
    std::vector<std::string> result = have;
    for (const auto& want : split(gres, ',')) {
      auto same = std::find_if(have.begin(), have.end(), [&](const std::string& h) { return gres_name(h) == gres_name(want); });
      if (same == have.end()) {
        result.push_back(user.tres_gres_prefix + want);
      } else if (c.conflicts(std::optional(without_gres_prefix(*same)), want, "--gres=" + without_gres_prefix(*same), "--gres=" + want)) {
        return out;
      }
    }
    if (!modify && result != have) out.set.tres_per_node = join(result, ",");
  }

  // features: the template's constraint is added to the user's, never replaced.
  if (auto constraint = t.constraint(); !constraint.empty()) {
    if (cluster_features) {
      std::string missing;
      auto within = constraint_within(constraint, *cluster_features, missing);
      if (!within) {
        out.error = "template '" + t.name + "' needs node feature " + missing + ", which no node has; nodes get their features from " +
                    "cnet-topo --format features (ask your admin), or choose another template";
        return out;
      }
      constraint = *within;
    }
    if (!user.features) {
      if (!modify) out.set.features = constraint;
    } else if (!balanced(*user.features)) {
      // Wrapped in parentheses as it is, "a)|(b" would turn the template's requirement into an option.
      out.error = "--constraint '" + common::printable(*user.features, 64) + "' has unbalanced parentheses; fix it (template '" + t.name +
                  "' adds " + constraint + " to it)";
      return out;
    } else if (*user.features != constraint && !user.features->ends_with(")&" + constraint)) {
      out.set.features = "(" + *user.features + ")&" + constraint;
    }
  }

  // nodes: the user's count must fall inside the template's range.
  if (t.nodes_min) {
    bool inside = (!user.min_nodes || (*user.min_nodes >= t.nodes_min && *user.min_nodes <= t.nodes_max)) &&
                  (!user.max_nodes || (*user.max_nodes >= t.nodes_min && *user.max_nodes <= t.nodes_max));
    std::string range = std::to_string(t.nodes_min) + (t.nodes_max != t.nodes_min ? "-" + std::to_string(t.nodes_max) : "");
    if (!inside) {
      std::string asked = std::to_string(user.min_nodes.value_or(user.max_nodes.value_or(0)));
      if (user.max_nodes && user.min_nodes && *user.max_nodes != *user.min_nodes) asked += "-" + std::to_string(*user.max_nodes);
      if (c.conflicts(std::optional(asked), range, "--nodes=" + asked, "--nodes=" + range)) return out;
    } else if (!modify && !user.min_nodes) {
      out.set.min_nodes = t.nodes_min;
      if (!user.max_nodes) out.set.max_nodes = t.nodes_max;
    }
  }

  // time: the template's limit is the default and the most a job may ask for.
  if (t.time_limit_min) {
    if (!user.time_limit_min) {
      if (!modify) out.set.time_limit_min = t.time_limit_min;
    } else if (*user.time_limit_min > t.time_limit_min &&
               c.conflicts(user.time_limit_min, t.time_limit_min, "--time=" + time_text(*user.time_limit_min),
                           "a time limit of " + time_text(t.time_limit_min))) {
      return out;
    }
  }

  if (!t.qos.empty()) {
    if (c.conflicts(user.qos, t.qos, "--qos=" + user.qos.value_or(""), "--qos=" + t.qos)) return out;
    if (!modify && !user.qos) out.set.qos = t.qos;
  }

  if (t.exclusive) {
    if (c.conflicts(user.exclusive, true, "--oversubscribe", "--exclusive")) return out;
    if (!modify && !user.exclusive) out.set.exclusive = true;
  }

  if (t.same_switch) {
    if (c.conflicts(user.switches, 1u, "--switches=" + std::to_string(user.switches.value_or(0)), "--switches=1")) return out;
    if (!modify && !user.switches) {
      out.set.switches = 1;
      out.set.switch_wait_s = user.switch_wait_s.value_or(t.switch_wait_s);
    }
  }

  auto& set = out.set;
  if (set.tres_per_node) out.notes.push_back("tres_per_node=" + *set.tres_per_node);
  if (set.features) out.notes.push_back("features=" + *set.features);
  if (set.min_nodes) out.notes.push_back("nodes=" + std::to_string(*set.min_nodes) + "-" + std::to_string(set.max_nodes.value_or(*set.min_nodes)));
  if (set.time_limit_min) out.notes.push_back("time_limit=" + std::to_string(*set.time_limit_min) + "min");
  if (set.qos) out.notes.push_back("qos=" + *set.qos);
  if (set.exclusive) out.notes.push_back("exclusive");
  if (set.switches) out.notes.push_back("switches=1@" + std::to_string(set.switch_wait_s.value_or(0)) + "s");
  return out;
}

std::string template_from_spank_env(const std::vector<std::string>& environment) {
  for (const std::string prefix : {"SPANK_CNET_TEMPLATE=", "CNET_TEMPLATE="})
    for (const auto& e : environment)
      if (e.rfind(prefix, 0) == 0) return e.substr(prefix.size());
  return "";
}

}  // namespace cnet::scheduling
