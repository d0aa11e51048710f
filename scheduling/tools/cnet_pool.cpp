// cnet-pool: the cluster's resource table from slurmctld through the public slurm.h API — per node its
// state, GPU model and GPUs in use/total, GPU memory class, fabric, CPUs and memory in use, and why a
// node is down or drained, and jobs that hold a node long past their end (stuck completing, or running
// past their time limit).
//   cnet-pool [--json] [--watch SECONDS] [--stuck-after SECONDS] [--prometheus FILE.prom]
// Exit: 0 ok, 2 bad arguments, 3 slurmctld could not be asked.
#include <boost/program_options.hpp>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <thread>

#include "cnet/common/slurm_config.hpp"
#include "cnet/common/version.hpp"
#include "cnet/scheduling/pool_table.hpp"
#include "cnet/scheduling/stuck_jobs.hpp"

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

namespace po = boost::program_options;
using cnet::scheduling::PoolRow;

namespace {

std::string state_name(std::uint32_t state) {
  static const char* base[] = {"unknown", "down", "idle", "alloc", "error", "mixed", "future"};
  std::uint32_t b = state & NODE_STATE_BASE;
  std::string name = b < 7 ? base[b] : "unknown";
  if (state & NODE_STATE_DRAIN) name = (b == NODE_STATE_IDLE || b == NODE_STATE_DOWN) ? "drained" : "draining";
  if (state & NODE_STATE_COMPLETING) name += "+comp";
  if (state & NODE_STATE_NO_RESPOND) name += "*";
  return name;
}

// slurmctld fills a job's user name only now and then: the uid's name here, else the number.
std::string user_name(uid_t uid) {
  passwd entry{}, *found = nullptr;
  char buf[4096];
  return getpwuid_r(uid, &entry, buf, sizeof buf, &found) == 0 && found ? std::string(found->pw_name) : std::to_string(uid);
}

// Running and completing jobs with the nodes they hold, as cnet's stuck-job rule reads them.
std::vector<cnet::scheduling::HeldJob> load_held_jobs() {
  job_info_msg_t* jobs = nullptr;
  if (slurm_load_jobs(static_cast<time_t>(0), &jobs, SHOW_ALL) != SLURM_SUCCESS)
    throw std::runtime_error(std::string("cannot ask slurmctld for jobs: ") + slurm_strerror(errno));
  std::vector<cnet::scheduling::HeldJob> out;
  for (std::uint32_t i = 0; i < jobs->record_count; ++i) {
    const slurm_job_info_t& j = jobs->job_array[i];
    bool completing = j.job_state & JOB_COMPLETING;
    if (!j.nodes || (!completing && (j.job_state & JOB_STATE_BASE) != JOB_RUNNING)) continue;
    cnet::scheduling::HeldJob h;
    h.job_id = std::to_string(j.job_id);
    h.user = j.user_name ? j.user_name : user_name(j.user_id);
    h.completing = completing;
    h.end_time = static_cast<std::int64_t>(j.end_time);
    try {
      h.nodes = cnet::common::expand_hostlist(j.nodes);
    } catch (const cnet::common::ConfigError&) {
      continue;
    }
    out.push_back(std::move(h));
  }
  slurm_free_job_info_msg(jobs);
  return out;
}

std::vector<PoolRow> load_rows() {
  node_info_msg_t* nodes = nullptr;
  // SHOW_DETAIL is what fills gres_used. Errors are in errno (Slurm 24.11 has no slurm_get_errno()).
  if (slurm_load_node(static_cast<time_t>(0), &nodes, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS)
    throw std::runtime_error(std::string("cannot ask slurmctld for nodes: ") + slurm_strerror(errno) +
                             " (is SLURM_CONF right and slurmctld up?)");
  std::vector<PoolRow> rows;
  for (std::uint32_t i = 0; i < nodes->record_count; ++i) {
    const node_info_t& n = nodes->node_array[i];
    if (!n.name) continue;
    PoolRow r;
    r.node = n.name;
    r.state = state_name(n.node_state);
    r.reason = n.reason ? n.reason : "";
    auto total = cnet::scheduling::parse_gpu_gres(n.gres ? n.gres : "");
    r.gpu_model = total.model;
    r.gpus_total = total.count;
    r.gpus_used = cnet::scheduling::parse_gpu_gres(n.gres_used ? n.gres_used : "").count;
    std::string features = n.features ? n.features : "";
    r.gpu_memory = cnet::scheduling::feature_matching(features, "gpumem");
    r.fabric = cnet::scheduling::feature_matching(features, "fabric");
    r.cpus_total = n.cpus;
    r.memory_mb = n.real_memory;
    std::uint16_t alloc_cpus = 0;
    std::uint64_t alloc_mem = 0;
    slurm_get_select_nodeinfo(n.select_nodeinfo, SELECT_NODEDATA_SUBCNT, NODE_STATE_ALLOCATED, &alloc_cpus);
    slurm_get_select_nodeinfo(n.select_nodeinfo, SELECT_NODEDATA_MEM_ALLOC, NODE_STATE_ALLOCATED, &alloc_mem);
    r.cpus_alloc = alloc_cpus;
    r.memory_alloc_mb = alloc_mem;
    rows.push_back(std::move(r));
  }
  slurm_free_node_info_msg(nodes);
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::common::print_version_if_asked(argc, argv, "cnet-pool")) return 0;
  unsigned watch = 0, stuck_after = 600;
  std::string prometheus;
  po::options_description opts("cnet-pool [--json] [--watch SECONDS] [--stuck-after SECONDS] [--prometheus FILE.prom]");
  opts.add_options()("help,h", "show this help")("version", "print the version")("json", "print the table as JSON")
      ("watch", po::value(&watch), "print again every SECONDS until interrupted")
      ("stuck-after", po::value(&stuck_after)->default_value(stuck_after),
       "name jobs holding a node this many seconds past their end (completing, or running past their time limit)")
      ("prometheus", po::value(&prometheus), "also write the table for node_exporter's textfile collector (FILE.prom; each --watch round)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "cnet-pool: " << e.what() << "\n" << opts;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "exit: 0 ok, 2 bad arguments, 3 slurmctld could not be asked\n";
    return 0;
  }
  try {
    if (!prometheus.empty()) cnet::common::check_textfile_path(prometheus);
  } catch (const std::exception& e) {
    std::cerr << "cnet-pool: --prometheus: " << e.what() << "\n";
    return 2;
  }
  slurm_init(nullptr);
  try {
    while (true) {
      auto rows = load_rows();
      auto stuck = cnet::scheduling::stuck_jobs(load_held_jobs(), std::time(nullptr), stuck_after);
      for (auto& r : rows)
        if (auto it = stuck.find(r.node); it != stuck.end())
          for (const auto& j : it->second) r.stuck.push_back(j.describe());
      std::cout << (vm.count("json") ? cnet::scheduling::to_json(rows) : cnet::scheduling::format_table(rows)) << std::flush;
      if (!prometheus.empty())
        cnet::common::write_textfile(prometheus, cnet::common::prometheus_text(cnet::scheduling::pool_metrics(rows, static_cast<double>(std::time(nullptr)))));
      if (!watch) break;
      std::this_thread::sleep_for(std::chrono::seconds(watch));
      if (!vm.count("json")) std::cout << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "cnet-pool: " << e.what() << "\n";
    slurm_fini();
    return 3;
  }
  slurm_fini();
  return 0;
}
