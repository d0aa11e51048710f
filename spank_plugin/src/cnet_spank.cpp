// cnet.so: the SPANK plugin. A thin C-ABI shell over libcnet_topology and the scheduling library:
// every entry point catches everything, reports through slurm_error or the task's stderr, and returns
// an error code; nothing is thrown across the ABI and no shell is ever run.
//
// plugstack.conf: required cnet.so templates=/etc/slurm/cnet-templates.conf [cache=/var/spool/cnet]
//                 [hwloc_xml=FILE] [sysfs_root=DIR]   (the last two point discovery at a fixture, for tests)
#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cnet/common/files.hpp"
#include "cnet/common/host.hpp"
#include "cnet/common/process.hpp"
#include "cnet/common/text.hpp"
#include "cnet/scheduling/cpu_binding.hpp"
#include "cnet/scheduling/stale_step_state.hpp"
#include "cnet/scheduling/task_environment.hpp"
#include "cnet/scheduling/template_catalog.hpp"
#include "cnet/topology/check.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"

// spank.h has no C++ guards of its own, and SPANK_PLUGIN's const globals would have internal linkage
// in C++, hiding them from Slurm's plugin loader: spell them out with extern.
extern "C" {
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
extern const char plugin_name[] = "cnet";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
#include <slurm/slurm.h>  // slurm_conf_t: the running daemon's own configuration, found with dlsym
}

namespace {
using namespace cnet::scheduling;
using cnet::common::hostname;
using cnet::common::plain_value;
namespace topo = cnet::topology;

constexpr int kOk = 0, kFail = -1;
constexpr std::chrono::seconds kDiscoveryDeadline{20};

struct PluginArgs {
  std::string templates = "/etc/slurm/cnet-templates.conf";
  std::string cache_dir = "/var/spool/cnet";
  std::string hwloc_xml, sysfs_root;
};

// What this process saw on the command line (client) or received with the step (remote).
struct Options {
  std::string template_name;
  BindMode bind = BindMode::closest;
  bool bind_requested = false;
  NetMode net = NetMode::automatic;
  bool net_requested = false;
  bool check = false;
};
Options g_options;
PluginArgs g_args;
std::optional<topo::NodeTopology> g_step_topology;  // read in user_init, used by every task
std::string g_topology_problem;                     // why there is none
std::string g_topology_path;                        // the cache file, when slurmd wrote one
std::string g_nccl_topo_file;
std::vector<std::string> g_check_failures;          // --cnet-check's findings for this node, once per step

bool absolute_plain_path(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 1024 || p.find("/../") != std::string::npos || p.ends_with("/..")) return false;
  for (char c : p)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '.' || c == '+')) return false;
  return true;
}

bool parse_args(int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    std::string arg = av[i];
    auto eq = arg.find('=');
    std::string key = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    std::string* slot = key == "templates" ? &g_args.templates : key == "cache" ? &g_args.cache_dir
                      : key == "hwloc_xml" ? &g_args.hwloc_xml : key == "sysfs_root" ? &g_args.sysfs_root : nullptr;
    if (!slot) {
      slurm_error("cnet: unknown plugstack.conf argument '%s' (known: templates=, cache=, hwloc_xml=, sysfs_root=)", arg.c_str());
      return false;
    }
    if (!absolute_plain_path(value)) {
      slurm_error("cnet: plugstack.conf argument %s needs an absolute path without '..' or special characters", key.c_str());
      return false;
    }
    *slot = value;
  }
  return true;
}

std::string cache_path() { return g_args.cache_dir + "/topology-" + hostname() + ".json"; }

// Discovery in a child with a deadline: a hung GPU driver must not hang slurmd or a job step with it.
topo::NodeTopology discover_node() {
  topo::DiscoveryOptions o;
  if (!g_args.hwloc_xml.empty()) o.hwloc_xml = g_args.hwloc_xml;
  if (!g_args.sysfs_root.empty()) o.sysfs_root = g_args.sysfs_root;
  o.hostname = hostname();  // this node, even when a fixture or a tree describes its devices in tests
  auto r = cnet::common::run_in_child([&] { return topo::to_json(topo::discover(o)); }, kDiscoveryDeadline);
  if (r.timed_out) throw std::runtime_error("topology discovery did not finish within " + std::to_string(kDiscoveryDeadline.count()) + " s (a hung GPU driver?)");
  if (!r.ok()) throw std::runtime_error(r.output.empty() ? "topology discovery failed" : r.output);
  return topo::from_json(r.output);
}

// slurmd, as root: discover once and leave a world-readable cache for the job steps.
void write_topology_cache() {
  std::filesystem::create_directories(g_args.cache_dir);
  chmod(g_args.cache_dir.c_str(), 0755);
  cnet::common::write_file_atomically(cache_path(), topo::to_json(discover_node()), 0644);
  slurm_info("cnet: node topology cached in %s", cache_path().c_str());
}

// The cache slurmd wrote; when it cannot be read (missing, an unreadable folder), discover now rather
// than fail the job.
topo::NodeTopology read_topology_cache() {
  std::optional<std::string> text;
  try {
    text = cnet::common::read_file_if_exists(cache_path(), 64u << 20);
  } catch (const cnet::common::FileError& e) {
    slurm_info("cnet: %s; discovering this node's topology for the step instead", e.what());
  }
  return text ? topo::from_json(*text) : discover_node();
}

// ---- option callbacks: run in the client (remote == 0) and again in slurmstepd (remote == 1) ----

int on_template(int, const char* optarg, int remote) {
  std::string v = optarg ? optarg : "";
  if (!plain_value(v) || (!valid_template_name(v) && v != "list")) {
    slurm_error("cnet: --cnet-template needs a template name (letters, digits, '_', '.', '-'; at most 64), or 'list'");
    return kFail;
  }
  if (!remote) {
    try {
      TemplateCatalog catalog = TemplateCatalog::load(g_args.templates);
      if (v == "list") {
        std::printf("cnet resource templates (%s):\n", g_args.templates.c_str());
        for (const auto& t : catalog.templates()) std::printf("  %s\n", t.summary().c_str());
        std::fflush(stdout);
        std::_Exit(0);  // like --help: print and stop the client before anything is submitted
      }
      if (!catalog.find(v)) {
        slurm_error("cnet: unknown template '%s'; valid templates: %s (see --cnet-template=list)", v.c_str(),
                    catalog.names().c_str());
        return kFail;
      }
    } catch (const std::exception& e) {
      slurm_error("cnet: %s", e.what());
      return kFail;
    }
  }
  g_options.template_name = v;
  return kOk;
}

// --cnet-bind / --cnet-net: one of a few words, anything else refused naming them.
template <typename Mode>
int set_mode(const char* optarg, std::optional<Mode> (*parse)(std::string_view), const char* refusal, Mode& slot) {
  auto mode = parse(optarg ? optarg : "");
  if (!mode) {
    slurm_error("cnet: %s", refusal);
    return kFail;
  }
  slot = *mode;
  return kOk;
}

int on_bind(int, const char* optarg, int) {
  g_options.bind_requested = true;
  return set_mode(optarg, parse_bind, "--cnet-bind must be none, closest or strict", g_options.bind);
}

int on_net(int, const char* optarg, int) {
  g_options.net_requested = true;
  return set_mode(optarg, parse_net, "--cnet-net must be auto, rdma or tcp", g_options.net);
}

int on_check(int, const char*, int) {
  g_options.check = true;
  return kOk;
}

struct spank_option g_spank_options[] = {
    {const_cast<char*>("cnet-template"), const_cast<char*>("NAME"),
     const_cast<char*>("cnet resource template to apply ('list' prints them)"), 1, 0, on_template},
    {const_cast<char*>("cnet-bind"), const_cast<char*>("MODE"),
     const_cast<char*>("cnet GPU/NIC/CPU binding per task: none, closest (default) or strict"), 1, 0, on_bind},
    {const_cast<char*>("cnet-net"), const_cast<char*>("NET"),
     const_cast<char*>("cnet transport: auto (default), rdma or tcp"), 1, 0, on_net},
    {const_cast<char*>("cnet-check"), nullptr,
     const_cast<char*>("cnet preflight: fail the step if a node's NICs are down, degraded or mismatched"), 0, 0, on_check},
};

template <typename F>
int guarded(const char* where, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    slurm_error("cnet: %s: %s", where, e.what());
  } catch (...) {
    slurm_error("cnet: %s: unexpected error", where);
  }
  return kFail;
}

std::string getenv_of(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return "";
  return buf;
}

// Writes the step's NCCL topology into a private folder in the job's tmp. Runs in user_init, where
// slurmstepd has dropped to the job user, so the files belong to the user; O_NOFOLLOW/O_EXCL refuse
// anything planted there.
std::string write_nccl_topology(spank_t sp, const topo::NodeTopology& node) {
  std::string tmp = getenv_of(sp, "TMPDIR");
  if (!absolute_plain_path(tmp)) tmp = "/tmp";
  uint32_t job = 0, step = 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  std::string dir = tmp + "/cnet-" + std::to_string(job) + "." + std::to_string(step);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    throw std::runtime_error(dir + " exists and is not this user's own folder");
  std::string path = dir + "/nccl-topo.xml";
  unlink(path.c_str());  // an earlier run of this step (requeued after its node died) left it in our own folder
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  std::string xml = topo::to_nccl_xml(node);
  bool ok = write(fd, xml.data(), xml.size()) == static_cast<ssize_t>(xml.size());
  close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
  return path;
}

// Removes what write_nccl_topology made, as root at step exit, never following what the user swapped in.
void remove_nccl_topology(uid_t owner) {
  if (g_nccl_topo_file.empty()) return;
  std::filesystem::path file(g_nccl_topo_file);
  cnet::common::remove_file_and_folder(file.parent_path(), file.filename().string(), owner);
}

void print_to_task(const std::string& line) {
  std::string text = "cnet: " + hostname() + ": " + line + "\n";
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}


// slurm.conf names gres/rdma in GresTypes, yet no gres_rdma.so is loaded in this slurmstepd: Slurm
// skipped it (built for another release, say) with one line in slurmd's log, so the RDMA NICs jobs
// are allocated would silently reach no NCCL_IB_HCA/UCX_NET_DEVICES. "" when all is well.
std::string skipped_gres_rdma() {
  const auto* conf = static_cast<const slurm_conf_t*>(dlsym(RTLD_DEFAULT, "slurm_conf"));
  if (!conf || !conf->gres_plugins) return "";
  auto types = cnet::common::split(conf->gres_plugins);
  if (std::find(types.begin(), types.end(), "rdma") == types.end()) return "";
  bool loaded = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* found) {
        if (info->dlpi_name && std::filesystem::path(info->dlpi_name).filename() == "gres_rdma.so") *static_cast<bool*>(found) = true;
        return 0;
      },
      &loaded);
  if (loaded) return "";
  return "slurm.conf's GresTypes names rdma, but gres/rdma is not loaded in this step (slurmd's log says why: a gres_rdma.so "
         "built for another Slurm release is skipped), so RDMA NICs allocated with --gres=rdma get no NCCL_IB_HCA/UCX_NET_DEVICES; "
         "cnet-doctor's 'plugins' check names the mismatch";
}

// In slurmstepd, before mpi/pmix sets the step up: remove what an earlier run of this very step left
// on the node (a requeued job whose node died under it), which would otherwise fail the launch.
void clear_stale_pmix_state(spank_t sp) {
  uint32_t job = 0, step = 0;
  uid_t uid = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
    return;
  const auto* conf = static_cast<const slurm_conf_t*>(dlsym(RTLD_DEFAULT, "slurm_conf"));
  if (!conf || !conf->slurmd_spooldir) return;
  // %n in SlurmdSpoolDir is the NodeName (slurmd -N may differ from the host name), %h the host name.
  // slurmstepd's own environment has it from slurmd's configuration (set before any plugin runs); the
  // job's environment, which the job writes, is never asked, and a name is one path component at most.
  const char* from_slurmd = std::getenv("SLURMD_NODENAME");
  std::string node = from_slurmd ? from_slurmd : "";
  try {
    auto paths = pmix_step_paths(conf->slurmd_spooldir, conf->tmp_fs ? conf->tmp_fs : "", node, cnet::common::short_hostname(), uid, job, step);
    for (const auto& p : remove_stale_pmix_state(paths, uid))
      slurm_info("cnet: removed %s, left on this node by an earlier run of step %u.%u", p.c_str(), job, step);
  } catch (const std::exception& e) {
    slurm_error("cnet: %s; mpi/pmix may fail to start this step", e.what());
  }
}

// --cnet-check looks at the NICs as they are now (fresh discovery, not the cache), once per node and
// step; every task then reports the same verdict. MTUs are compared among the NICs the job uses: the
// ones its own UCX_NET_DEVICES/NCCL_SOCKET_IFNAME name, else its Ethernet under --cnet-net=tcp, else
// the RDMA NICs.
std::vector<std::string> check_this_node(spank_t sp) {
  std::optional<topo::NodeTopology> now;
  try {
    now = discover_node();
  } catch (const std::exception& e) {
    return {std::string("--cnet-check cannot look at this node's NICs: ") + e.what()};
  }
  topo::CheckOptions options;
  options.tcp_fabric = g_options.net == NetMode::tcp;
  if (getenv_of(sp, "CNET_NICS").empty()) {  // the user's own choice, not one cnet made for an enclosing step
    std::map<std::string, std::string> env;  // kept alive while the selection is read from it
    options.fabric = topo::NicSelection::from_environment([&](const char* var) -> const char* {
      std::string v = getenv_of(sp, var);  // NIC names after NCCL's '^' / '=' markers, nothing else
      std::size_t marks = v.find_first_not_of("^=");
      if (marks > 2 || !plain_value(std::string_view(v).substr(marks), 1024)) return nullptr;
      return env.insert_or_assign(var, std::move(v)).first->second.c_str();
    });
  }
  std::vector<std::string> lines;
  for (const auto& f : topo::check_links(*now, options))
    if (f.kind == topo::FindingKind::link_fault) lines.push_back("--cnet-check: " + f.subject + ": " + f.problem + " -- fix: " + f.fix);
  return lines;
}

}  // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
    if (!parse_args(ac, av)) return kFail;
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_SLURMD) {
      // A discovery failure must not keep slurmd down: jobs fall back to discovering per step.
      try {
        write_topology_cache();
      } catch (const std::exception& e) {
        slurm_error("cnet: topology discovery for the cache failed: %s; steps will discover on their own", e.what());
      }
      return kOk;
    }
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR) return kOk;
    if (ctx == S_CTX_REMOTE) clear_stale_pmix_state(sp);
    for (auto& opt : g_spank_options)
      if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
        slurm_error("cnet: cannot register --%s", opt.name);
        return kFail;
      }
    return kOk;
  });
}

// Client side: the template travels to slurmctld in the job's SPANK environment, where job_submit/cnet
// applies it. This plugin does not pretend to change resources itself.
int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  return guarded("init_post_opt", [&] {
    spank_context_t ctx = spank_context();
    if ((ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) && !g_options.template_name.empty())
      spank_job_control_setenv(sp, "CNET_TEMPLATE", g_options.template_name.c_str(), 1);
    return kOk;
  });
}

int slurm_spank_user_init(spank_t sp, int, char**) {
  if (!spank_remote(sp)) return kOk;
  return guarded("user_init", [&] {
    if (g_options.check) g_check_failures = check_this_node(sp);
    std::error_code ec;
    if (std::filesystem::exists(cache_path(), ec) && access(cache_path().c_str(), R_OK) == 0) g_topology_path = cache_path();
    // Without a topology the job still runs (cnet's gap is not the user's fault); only tasks that
    // explicitly asked for binding, RDMA or a preflight are stopped, in task_init, with this reason.
    try {
      g_step_topology = read_topology_cache();
    } catch (const std::exception& e) {
      g_topology_problem = e.what();
      slurm_error("cnet: no node topology for this step: %s", e.what());
      return kOk;
    }
    try {
      g_nccl_topo_file = write_nccl_topology(sp, *g_step_topology);
    } catch (const std::exception& e) {
      slurm_error("cnet: no NCCL topology file for this step: %s", e.what());  // NCCL still detects on its own
    }
    return kOk;
  });
}

int slurm_spank_task_init(spank_t sp, int, char**) {
  if (!spank_remote(sp)) return kOk;
  return guarded("task_init", [&] {
    int local_task = 0;
    uint32_t local_tasks = 1;
    spank_get_item(sp, S_TASK_ID, &local_task);
    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks);

    if (local_task == 0)
      if (auto why = skipped_gres_rdma(); !why.empty()) print_to_task(why);
    if (!g_check_failures.empty()) {
      if (local_task == 0)
        for (const auto& line : g_check_failures) print_to_task(line);
      return kFail;
    }
    if (!g_step_topology) {
      // Refused: what cannot be done without one (cores to bind, an RDMA NIC to find, NICs to check).
      // --cnet-bind=none asks for nothing, and closest (the default) runs without a NIC choice.
      bool needs_topology = g_options.check || g_options.bind == BindMode::strict || g_options.net == NetMode::rdma;
      if (needs_topology) {
        if (local_task == 0) print_to_task("no node topology, so --cnet-bind/--cnet-net/--cnet-check cannot be honoured: " + g_topology_problem);
        return kFail;
      }
      if (local_task == 0 && g_options.bind_requested && g_options.bind == BindMode::closest)
        print_to_task("no node topology, so no NIC is chosen for this task (--cnet-bind=closest): " + g_topology_problem);
      if (!g_options.template_name.empty()) spank_setenv(sp, "CNET_TEMPLATE", g_options.template_name.c_str(), 1);
      return kOk;
    }

    TaskRequest request;
    std::string gpus = getenv_of(sp, "SLURM_STEP_GPUS");
    if (gpus.empty()) gpus = getenv_of(sp, "CUDA_VISIBLE_DEVICES");
    if (!gpus.empty()) {
      auto parsed = cnet::common::parse_ranges(gpus);
      if (!parsed) {
        print_to_task("cannot read the step's GPU list '" + gpus.substr(0, 64) + "'; GPU binding skipped");
      } else {
        request.step_gpus = *parsed;
      }
    }
    request.local_task = static_cast<unsigned>(local_task);
    request.local_tasks = local_tasks;
    request.bind = g_options.bind;
    request.bind_requested = g_options.bind_requested;
    request.net = g_options.net;
    request.template_name = g_options.template_name;
    request.topology_path = g_topology_path;
    request.nccl_topo_file = g_nccl_topo_file;
    if (std::string rdma = getenv_of(sp, "CNET_RDMA_DEVICES"); plain_value(rdma, 1024))
      request.allocated_rdma = cnet::common::split(rdma);
    request.inherited_nics = !getenv_of(sp, "CNET_NICS").empty();
    request.net_requested = g_options.net_requested;
    for (const char* var : {"NCCL_IB_HCA", "UCX_NET_DEVICES", "NCCL_SOCKET_IFNAME"})
      if (!getenv_of(sp, var).empty() && getenv_of(sp, "CNET_RDMA_DEVICES").empty()) request.user_nic_variables = true;

    TaskEnvironment env = plan_task_environment(*g_step_topology, request);
    if (!env.error.empty()) {
      print_to_task(env.error);
      return kFail;
    }
    if (!env.warning.empty() && local_task == 0) print_to_task(env.warning);
    for (const auto& name : env.unset) spank_unsetenv(sp, name.c_str());
    for (const auto& [name, value] : env.variables) spank_setenv(sp, name.c_str(), value.c_str(), 1);
    if (!env.cpus.empty())
      if (auto why = bind_within_allowed(env.cpus); !why.empty()) print_to_task("--cnet-bind=strict: " + why);
    return kOk;
  });
}

int slurm_spank_exit(spank_t sp, int, char**) {
  if (!spank_remote(sp)) return kOk;
  return guarded("exit", [&] {
    uid_t uid = 0;
    spank_get_item(sp, S_JOB_UID, &uid);
    remove_nccl_topology(uid);
    return kOk;
  });
}

}  // extern "C"
