#pragma once
// Resource templates: named job shapes a site defines once in cnet-templates.conf and users ask for
// with --cnet-template=NAME. Parsed here for the SPANK plugin (validation, listing) and job_submit/cnet
// (expansion into the job request), so both read the file the same way.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnet::scheduling {

class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Fabric { any, ib, roce, eth };

struct ResourceTemplate {
  std::string name;
  std::string description;
  unsigned gpus_per_node = 0;
  std::string gpu_type;             // gres type, e.g. "a100" (empty: any)
  unsigned rdma_per_node = 0;       // RDMA NICs per node (gres/rdma)
  unsigned min_gpu_memory_gb = 0;
  Fabric fabric = Fabric::any;
  unsigned min_bandwidth_gbps = 0;
  unsigned nodes_min = 0, nodes_max = 0;  // 0: not set
  std::vector<std::string> features;      // all required
  bool same_switch = false;
  unsigned switch_wait_s = 0;
  bool exclusive = false;
  unsigned time_limit_min = 0;            // 0: not set
  std::string qos;
  bool allow_override = false;            // user flags may override what the template sets

  // Slurm --constraint expression for features, GPU memory class and fabric/bandwidth (empty if none).
  std::string constraint() const;
  // Slurm gres request per node, e.g. "gpu:a100:8" or "gpu:2,rdma:1" (empty if neither).
  std::string gres_per_node() const;
  // One line for `--cnet-template=list`.
  std::string summary() const;
};

class TemplateCatalog {
 public:
  // Parses cnet-templates.conf text; errors name source:line, the problem and the fix.
  static TemplateCatalog parse(const std::string& text, const std::string& source = "cnet-templates.conf");
  static TemplateCatalog load(const std::string& path);

  const ResourceTemplate* find(const std::string& name) const;
  const std::vector<ResourceTemplate>& templates() const { return templates_; }
  std::string names() const;  // "a, b, c"

 private:
  std::vector<ResourceTemplate> templates_;
};

const char* to_string(Fabric fabric);
// Template names: letters, digits, '_', '.', '-'; starts with a letter or digit; at most 64 characters.
bool valid_template_name(const std::string& name);

}  // namespace cnet::scheduling
