#include "cnet/scheduling/template_bridge.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "cnet/scheduling/template_expansion.hpp"
#include "cnet/common/text.hpp"

namespace {

using namespace cnet::scheduling;
using cnet::common::split;

char* copy(const std::string& s) { return strdup(s.c_str()); }

// The last good catalogue and the file state it came from; a damaged file never replaces it.
struct CatalogCache {
  std::mutex mutex;
  std::string path;
  struct timespec mtime {};
  off_t size = -1;
  std::optional<TemplateCatalog> catalog;
  std::string problem;  // why the current file is not in use

  const TemplateCatalog* get(const std::string& file, std::string& report) {
    struct stat st{};
    if (stat(file.c_str(), &st) != 0) {
      std::string p = "cannot read templates file " + file + ": " + std::strerror(errno);
      if (p != problem) report = problem = p;
      return catalog ? &*catalog : nullptr;
    }
    bool changed = file != path || st.st_mtim.tv_sec != mtime.tv_sec || st.st_mtim.tv_nsec != mtime.tv_nsec || st.st_size != size;
    if (changed) {
      path = file, mtime = st.st_mtim, size = st.st_size;
      try {
        catalog = TemplateCatalog::load(file);
        problem.clear();
      } catch (const std::exception& e) {
        problem = std::string(e.what()) + (catalog ? "; keeping the templates read before" : "; no templates until it is fixed");
        report = problem;
      }
    }
    return catalog ? &*catalog : nullptr;
  }
};

CatalogCache g_cache;

std::optional<std::string> text(const char* s) { return s ? std::optional<std::string>(s) : std::nullopt; }
std::optional<std::uint32_t> number(std::uint32_t v) { return v == CNET_UNSET_U32 ? std::nullopt : std::optional(v); }

}  // namespace

extern "C" int cnet_apply_template(const char* templates_path, const cnet_job_request_t* r, cnet_job_edit_t* edit) {
  std::memset(edit, 0, sizeof *edit);
  edit->min_nodes = edit->max_nodes = edit->time_limit = edit->req_switch = edit->wait4switch = CNET_UNSET_U32;
  edit->exclusive = -1;
  try {
    std::vector<std::string> env;
    for (std::uint32_t i = 0; r->spank_env && i < r->spank_env_size; ++i)
      if (r->spank_env[i]) env.emplace_back(r->spank_env[i]);
    std::string name = template_from_spank_env(env);
    if (name.empty()) return 0;

    std::lock_guard lock(g_cache.mutex);
    std::string report;
    const TemplateCatalog* catalog = g_cache.get(templates_path, report);
    if (!report.empty()) edit->catalog_problem = copy(report);
    if (!catalog) {
      edit->message = copy("cnet: job asks for template '" + name + "' but slurmctld has no template catalogue (" + g_cache.problem +
                           "); ask your admin");
      return 1;
    }
    const ResourceTemplate* t = catalog->find(name);
    if (!t) {
      edit->message = copy("cnet: unknown template '" + name + "'; valid templates: " + catalog->names() +
                           " (srun --cnet-template=list shows what each sets)");
      return 1;
    }
    JobRequest user;
    user.tres_per_node = text(r->tres_per_node);
    user.features = text(r->features);
    user.qos = text(r->qos);
    user.min_nodes = number(r->min_nodes);
    user.max_nodes = number(r->max_nodes);
    user.time_limit_min = number(r->time_limit);
    user.switches = number(r->req_switch);
    user.switch_wait_s = number(r->wait4switch);
    if (r->exclusive >= 0) user.exclusive = r->exclusive == 1;
    std::set<std::string> features;
    for (std::uint32_t i = 0; r->node_features && i < r->node_count; ++i) {
      for (auto& f : split(r->node_features[i] ? r->node_features[i] : "")) features.insert(std::move(f));
    }
    Expansion x = expand_template(*t, user, r->modify != 0, r->node_features ? &features : nullptr);
    edit->template_name = copy(name);
    if (!x.error.empty()) {
      edit->message = copy("cnet: " + x.error);
      return 1;
    }
    const JobRequest& s = x.set;
    if (s.tres_per_node) edit->tres_per_node = copy(*s.tres_per_node);
    if (s.features) edit->features = copy(*s.features);
    if (s.qos) edit->qos = copy(*s.qos);
    if (s.min_nodes) edit->min_nodes = *s.min_nodes;
    if (s.max_nodes) edit->max_nodes = *s.max_nodes;
    if (s.time_limit_min) edit->time_limit = *s.time_limit_min;
    if (s.switches) edit->req_switch = *s.switches;
    if (s.switch_wait_s) edit->wait4switch = *s.switch_wait_s;
    if (s.exclusive) edit->exclusive = 1;
    std::string note;
    for (const auto& n : x.notes) note += (note.empty() ? "" : " ") + n;
    edit->note = copy(note);
    return 0;
  } catch (const std::exception& e) {
    edit->message = copy(std::string("cnet: internal error applying the template: ") + e.what());
    return 1;
  } catch (...) {
    edit->message = copy("cnet: internal error applying the template");
    return 1;
  }
}

extern "C" char* cnet_preload_templates(const char* templates_path, int* ok) {
  try {
    std::lock_guard lock(g_cache.mutex);
    std::string report;
    const TemplateCatalog* catalog = g_cache.get(templates_path, report);
    *ok = catalog && report.empty();
    return copy(*ok ? std::to_string(catalog->templates().size()) + " templates: " + catalog->names() : report);
  } catch (const std::exception& e) {
    *ok = 0;
    return copy(e.what());
  }
}

extern "C" void cnet_job_edit_free(cnet_job_edit_t* e) {
  for (char** s : {&e->tres_per_node, &e->features, &e->qos, &e->template_name, &e->message, &e->note, &e->catalog_problem}) {
    std::free(*s);
    *s = nullptr;
  }
}
