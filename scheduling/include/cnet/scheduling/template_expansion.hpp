#pragma once
// What job_submit/cnet does to a job that names a resource template: fill in what the user left unset
// from the template, and refuse what the user set against it (unless the template allows overrides).
// Pure logic over the fields of a Slurm job request, so it is tested outside slurmctld.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cnet/scheduling/template_catalog.hpp"

namespace cnet::scheduling {

// The fields of a job request a template can set; nullopt: not given by the user.
struct JobRequest {
  // "gres:gpu:2,gres:rdma:1" before Slurm 23.02, "gres/gpu:2,gres/rdma:1" since (tres_spelling says which)
  std::optional<std::string> tres_per_node;
  std::optional<std::string> features;       // --constraint
  std::optional<std::uint32_t> min_nodes, max_nodes;
  std::optional<std::uint32_t> time_limit_min;
  std::optional<std::string> qos;
  std::optional<bool> exclusive;             // --exclusive (true) / --oversubscribe (false)
  std::optional<std::uint32_t> switches, switch_wait_s;
  // The prefix the running slurmctld writes before each gres in tres_per_node, and reads back: entries the
  // template adds use it (24.11 misreads "gres:gpu:2"); the user's entries are understood in either form.
  std::string tres_gres_prefix = "gres:";
};

struct Expansion {
  JobRequest set;          // the fields to write into the job request
  std::string error;       // set: refuse the job with this message (names both sides and the way out)
  std::vector<std::string> notes;  // what was applied, for slurmctld's log
};

// `modify`: a change to a job already queued under the template: conflicts are checked, nothing is added.
// `cluster_features`: the features nodes have; the template's "any class at or above" alternatives are
// cut to those (Slurm refuses a constraint naming a feature no node has), and a requirement no node can
// meet refuses the job. nullptr: the constraint is used as it is.
Expansion expand_template(const ResourceTemplate& t, const JobRequest& user, bool modify = false,
                          const std::set<std::string>* cluster_features = nullptr);

// "a&(b|c)&(d|e)" with only the alternatives in `known`; nullopt naming the first term none of whose
// alternatives is known (in `missing`).
std::optional<std::string> constraint_within(const std::string& constraint, const std::set<std::string>& known, std::string& missing);

// The template a job names in its SPANK environment ("SPANK_CNET_TEMPLATE=name" or "CNET_TEMPLATE=name");
// "" when none.
std::string template_from_spank_env(const std::vector<std::string>& environment);

}  // namespace cnet::scheduling
