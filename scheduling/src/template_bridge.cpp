#include "cnet/scheduling/template_bridge.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "cnet/common/text.hpp"
#include "cnet/scheduling/template_expansion.hpp"
#include "cnet/scheduling/template_watcher.hpp"
#include "cnet/common/text.hpp"

namespace {

using namespace cnet::scheduling;
using cnet::common::split;

char* copy(const std::string& s) { return strdup(s.c_str()); }

struct Catalogue {
  std::mutex mutex;
  std::unique_ptr<TemplateWatcher> watcher;
};
Catalogue g_catalogue;

// The watcher's thread may outlive fini() (stuck in a read of a hung file system): keep this plugin's
// code mapped for it, whatever Slurm unloads.
void pin_this_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&pin_this_plugin), &info) && info.dli_fname)
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  });
}

TemplateWatcher& watcher_for(const std::string& path, unsigned interval_ms, cnet_log_fn log) {
  if (!g_catalogue.watcher || g_catalogue.watcher->path() != path) {
    pin_this_plugin();
    TemplateWatcher::Report report;
    if (log) report = [log](const std::string& line, bool error) { log(line.c_str(), error ? 1 : 0); };
    g_catalogue.watcher = std::make_unique<TemplateWatcher>(path, std::chrono::milliseconds(interval_ms), report);
  }
  return *g_catalogue.watcher;
}

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

    if (!valid_template_name(name)) {  // the SPANK environment is the user's: never into a log line as it is
      edit->message = copy("cnet: the job's template name '" + cnet::common::printable(name, 64) +
                           "' is not a template name (letters, digits, '_', '.', '-'; at most 64)");
      return 1;
    }
    std::shared_ptr<const TemplateCatalog> current;
    std::string problem;
    {
      std::lock_guard lock(g_catalogue.mutex);
      TemplateWatcher& w = watcher_for(templates_path, 2000, nullptr);
      current = w.current();  // no file is touched here: the watcher reads it outside slurmctld's locks
      problem = w.problem();
    }
    const TemplateCatalog* catalog = current.get();
    if (!catalog) {
      edit->message = copy("cnet: job asks for template '" + name + "' but slurmctld has no template catalogue (" +
                           (problem.empty() ? std::string("it is still being read") : problem) + "); ask your admin");
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
    if (r->tres_gres_prefix) user.tres_gres_prefix = r->tres_gres_prefix;
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

extern "C" void cnet_preload_templates(const char* templates_path, unsigned interval_ms, cnet_log_fn log) {
  try {
    std::lock_guard lock(g_catalogue.mutex);
    g_catalogue.watcher.reset();
    TemplateWatcher& w = watcher_for(templates_path, interval_ms ? interval_ms : 2000, log);
    // At load only, and bounded: a catalogue on a hung file system is reported, not waited for.
    if (!w.wait_for_first_read(std::chrono::seconds(2)) && log)
      log((std::string("still reading ") + templates_path + " after 2 s; templates apply once it answers").c_str(), 1);
  } catch (const std::exception& e) {
    if (log) log(e.what(), 1);
  }
}

extern "C" void cnet_stop_templates(void) {
  try {
    std::lock_guard lock(g_catalogue.mutex);
    g_catalogue.watcher.reset();
  } catch (...) {
  }
}

extern "C" void cnet_job_edit_free(cnet_job_edit_t* e) {
  for (char** s : {&e->tres_per_node, &e->features, &e->qos, &e->template_name, &e->message, &e->note}) {
    std::free(*s);
    *s = nullptr;
  }
}
