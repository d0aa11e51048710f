// cnet-doctor: the node self-check that catches most cluster problems before users do.
//   cnet-doctor [--json]                      run every check on this node (pass/warn/fail, value, fix)
//   cnet-doctor --health-check                as slurm.conf's HealthCheckProgram: drain on failure, resume
//                                             a node it drained itself once healthy; never drains on its own error
//   cnet-doctor snapshot [--output F]         record a good node's kernel parameters, limits, NICs, GPUs
//   cnet-doctor compare TEMPLATE              list how this node differs from a snapshot
// Options: --config F (thresholds, which checks run), --root DIR (procfs/sysfs/dev of a fake tree),
// --slurm-conf F, --nodes a,b (to resolve), --firewall-rules F (iptables-save output), --node NAME.
// Exit: check 0 pass or warn, 1 a check failed; compare 0 alike, 1 different; 2 bad arguments or config;
// --health-check always 0 (its verdict goes to Slurm through scontrol). --prometheus FILE.prom also
// writes the verdicts for node_exporter's textfile collector.
#include <boost/program_options.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "cnet/common/version.hpp"
#include "cnet/common/files.hpp"
#include "cnet/common/process.hpp"
#include "cnet/common/slurm_commands.hpp"
#include "cnet/common/text.hpp"
#include "cnet/doctor/checks.hpp"
#include "cnet/doctor/job_mode.hpp"

namespace po = boost::program_options;
using namespace cnet::doctor;

namespace {

constexpr auto kHealthCheckBudget = std::chrono::seconds(50);

// Runs scontrol with these arguments (no shell, a deadline), SLURM_CONF pointing at the cluster's config.
int scontrol(const std::vector<std::string>& args, const std::string& slurm_conf, std::chrono::milliseconds deadline, std::string* output) {
  std::vector<std::string> argv = {cnet::common::slurm_command("scontrol")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::pair<std::string, std::string>> env;
  if (!slurm_conf.empty()) env.emplace_back("SLURM_CONF", slurm_conf);
  auto r = cnet::common::run_command(argv, deadline, env);
  if (output) *output = r.output;
  return r.ok() ? 0 : r.timed_out ? -2 : -1;
}

// node_exporter's textfile: a failure to write it is reported, never fatal (the checks still count).
void write_metrics(const std::string& path, const std::string& node, const std::vector<CheckResult>& results) {
  if (path.empty()) return;
  try {
    cnet::common::write_textfile(path, cnet::common::prometheus_text(results_metrics(node, results, static_cast<double>(std::time(nullptr)))));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnet-doctor: --prometheus: %s\n", e.what());
  }
}

int health_check(const NodeFacts& facts, const DoctorConfig& config, const Deadlines& deadlines, const std::string& node,
                 const std::string& slurm_conf, const std::string& prometheus) {
  auto results = run_checks(facts, config);
  write_metrics(prometheus, node, results);
  std::string shown;
  auto deadline = [&] { return deadlines.within(config.deadline("scontrol")); };
  NodeState state;
  if (int rc = scontrol({"show", "node", "-o", node}, slurm_conf, deadline(), &shown); rc != 0 || !(state = node_state(shown)).known) {
    std::fprintf(stderr, "cnet-doctor: cannot read node %s from slurmctld%s; leaving it as it is\n", node.c_str(),
                 rc == -2 ? " (scontrol did not answer in time)" : "");
    return 0;
  }
  HealthAction action = health_action(results, state.drained, state.reason);
  if (action.kind == HealthAction::drain) {
    std::fprintf(stderr, "cnet-doctor: draining %s: %s\n", node.c_str(), action.reason.c_str());
    scontrol({"update", "NodeName=" + node, "State=DRAIN", "Reason=" + action.reason}, slurm_conf, deadline(), nullptr);
  } else if (action.kind == HealthAction::resume) {
    std::fprintf(stderr, "cnet-doctor: %s is healthy again; resuming it\n", node.c_str());
    scontrol({"update", "NodeName=" + node, "State=RESUME"}, slurm_conf, deadline(), nullptr);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::common::print_version_if_asked(argc, argv, "cnet-doctor")) return 0;
  std::string mode, arg, config_path, output, nodes, node, prometheus;
  GatherOptions g;
  JobModeOptions job;
  po::options_description opts("cnet-doctor [snapshot|compare TEMPLATE] [options]");
  opts.add_options()("help,h", "show this help")("version", "print the version")
      ("config", po::value(&config_path), "checks and thresholds (KEY = VALUE lines; see topology/README.md)")
      ("root", po::value(&g.root)->default_value("/"), "read /proc, /sys and device files under this folder")
      ("slurm-conf", po::value(&g.slurm_conf), "slurm.conf (default $SLURM_CONF or /etc/slurm/slurm.conf); gres.conf beside it")
      ("nodes", po::value(&nodes), "comma-separated nodes to resolve (default: every NodeName in slurm.conf)")
      ("firewall-rules", po::value(&g.firewall_rules_file), "iptables-save output to check (default: run iptables-save)")
      ("node", po::value(&node), "this node's Slurm name (default $SLURMD_NODENAME, else the hostname)")
      ("health-check", "HealthCheckProgram mode: drain on failure, resume what it drained once healthy")
      ("job", "under srun --mpi=pmix: every node checks itself, rank 0 prints one table comparing them")
      ("save-baseline", po::value(&job.save_baseline), "--job: save each node's pair-test result")
      ("compare-baseline", po::value(&job.compare_baseline), "--job: flag nodes whose bandwidth fell past --tolerance")
      ("tolerance", po::value(&job.tolerance)->default_value(0.2), "--job: allowed bandwidth drop, 0.2 = 20%")
      ("all-pairs", "--job: test every pair of nodes, not only each against rank 0; name slow pairs and the nodes behind them")
      ("heatmap", po::value(&job.heatmap), "--job: draw the all-pairs bandwidth and P99 matrix here (FILE.svg; implies --all-pairs)")
      ("output,o", po::value(&output), "snapshot: write to this file")
      ("json", "print results as JSON")
      ("prometheus", po::value(&prometheus), "check, --health-check: also write the verdicts for node_exporter's textfile collector (FILE.prom)");
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&mode))("arg", po::value(&arg));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("mode", 1).add("arg", 1);
  po::variables_map vm;
  DoctorConfig config = DoctorConfig::defaults();
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "exit: 0 ok (or only warnings), 1 a check failed / snapshot differs, 2 bad arguments or config\n";
      return 0;
    }
    if (!mode.empty() && mode != "snapshot" && mode != "compare") throw po::error("unknown command '" + mode + "' (snapshot or compare)");
    if (mode == "compare" && arg.empty()) throw po::error("compare needs the snapshot file: cnet-doctor compare TEMPLATE");
    if (!config_path.empty()) config = DoctorConfig::load(config_path);
    if (!prometheus.empty()) cnet::common::check_textfile_path(prometheus);
    if (!job.heatmap.empty()) {
      if (!vm.count("job")) throw po::error("--heatmap draws the pairs of a job: add --job (under srun --mpi=pmix)");
      if (!job.heatmap.ends_with(".svg")) throw po::error("--heatmap " + job.heatmap + ": the picture is SVG, name it FILE.svg");
      const auto folder = std::filesystem::path(job.heatmap).parent_path();
      if (!folder.empty() && !std::filesystem::is_directory(folder))
        throw po::error("--heatmap " + job.heatmap + ": folder " + folder.string() + " does not exist");
    }
  } catch (const std::exception& e) {
    std::cerr << "cnet-doctor: " << e.what() << "\n";
    return 2;
  }
  g.nodes = cnet::common::split(nodes);
  g.live_process_limits = g.root == "/";
  g.deadlines = {config.deadline("discovery"), config.deadline("dns"), config.deadline("firewall"), config.deadline("munge"), config.deadline("scontrol"),
                 config.deadline("nics")};
  if (node.empty()) node = std::getenv("SLURMD_NODENAME") ? std::getenv("SLURMD_NODENAME") : "";
  g.hostname = node;
  g.only_this_node = vm.count("health-check") > 0;
  // slurmd kills a HealthCheckProgram at 60 s: every step, the drain itself included, ends by 50 s.
  if (vm.count("health-check")) g.deadlines.finish_by = std::chrono::steady_clock::now() + kHealthCheckBudget;
  config.health_check = vm.count("health-check") > 0;

  if (vm.count("job")) {
    job.json = vm.count("json") > 0;
    job.all_pairs = vm.count("all-pairs") > 0 || !job.heatmap.empty();
    try {
      return run_job_mode(config, g, job);
    } catch (const std::exception& e) {
      std::cerr << "cnet-doctor --job: " << e.what() << "\n";
      return 2;
    }
  }
  NodeFacts facts;
  try {
    facts = gather_facts(g);
  } catch (const std::exception& e) {
    std::cerr << "cnet-doctor: cannot read this node: " << e.what() << "\n";
    return vm.count("health-check") ? 0 : 2;  // its own trouble never drains a node
  }
  if (vm.count("health-check")) return health_check(facts, config, g.deadlines, facts.hostname, g.slurm_conf, prometheus);

  if (mode == "snapshot") {
    std::string snap = snapshot_json(facts);
    if (output.empty()) {
      std::cout << snap;
      return 0;
    }
    try {
      cnet::common::write_file_atomically(output, snap);
    } catch (const std::exception& e) {
      std::cerr << "cnet-doctor: " << e.what() << "\n";
      return 2;
    }
    return 0;
  }
  if (mode == "compare") {
    try {
      auto diffs = compare_snapshot(cnet::common::read_file(arg, 16u << 20), facts);
      for (const auto& d : diffs) std::cout << d << "\n";
      if (diffs.empty()) std::cout << facts.hostname << " matches " << arg << "\n";
      return diffs.empty() ? 0 : 1;
    } catch (const std::exception& e) {
      std::cerr << "cnet-doctor: " << arg << ": " << e.what() << "\n";
      return 2;
    }
  }
  auto results = run_checks(facts, config);
  write_metrics(prometheus, facts.hostname, results);
  if (vm.count("json")) std::cout << results_json(facts.hostname, results);
  else std::cout << "cnet-doctor on " << facts.hostname << ": " << to_string(worst(results)) << "\n" << results_table(results);
  return worst(results) == Status::fail ? 1 : 0;
}
