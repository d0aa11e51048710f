// cnet-launch: the srun-invoked bootstrap for other frameworks. Every task joins the PMIx job, rank 0
// picks MASTER_ADDR/MASTER_PORT, every task gets the torch.distributed env:// variables and its GPU/NIC/CPU
// binding, then execs the command (so signals and the exit code are the command's own).
//   srun --mpi=pmix -N2 --ntasks-per-node=4 --gres=gpu:4 cnet-launch [--bind closest] -- python train.py
// Exit (before exec): 2 bad arguments, 3 rendezvous failed, 127 the command cannot be run.
#include <boost/program_options.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/host.hpp"
#include "cnet/common/text.hpp"
#include "cnet/common/version.hpp"
#include "cnet/launcher/launch_plan.hpp"
#include "cnet/scheduling/cpu_binding.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"

namespace po = boost::program_options;
using namespace cnet;

namespace {

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::optional<topology::NodeTopology> node_topology(std::string& problem) {
  try {
    std::string cached = env_or("CNET_TOPOLOGY");  // the SPANK plugin's per-node cache
    if (!cached.empty())
      if (auto text = common::read_file_if_exists(cached, 64u << 20)) return topology::from_json(*text);
    return topology::discover();
  } catch (const std::exception& e) {
    problem = e.what();
    return std::nullopt;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::common::print_version_if_asked(argc, argv, "cnet-launch")) return 0;
  // The command starts at "--" or at the first argument that is not one of ours.
  static const std::set<std::string> with_value = {"--bind", "--gpu-bind", "--master-addr", "--master-iface", "--master-port", "--timeout"};
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") { split = i; break; }
    if (a.empty() || a[0] != '-') { split = i; break; }
    if (with_value.count(a)) ++i;
  }
  int command_at = split < argc && std::string(argv[split]) == "--" ? split + 1 : split;

  std::string bind = "closest", gpu_bind = "visible", master_addr, master_iface;
  unsigned master_port = 0, timeout_s = 120;
  po::options_description opts("cnet-launch [options] [--] command [args...]   (under srun --mpi=pmix)");
  opts.add_options()("help,h", "show this help")("version", "print the version")
      ("bind", po::value(&bind)->default_value(bind), "none, closest (the GPU's NIC) or strict (also its cores)")
      ("gpu-bind", po::value(&gpu_bind)->default_value(gpu_bind), "visible: CUDA_VISIBLE_DEVICES as Slurm set it (LOCAL_RANK picks); single: only the task's GPU")
      ("master-addr", po::value(&master_addr), "MASTER_ADDR (default: rank 0's address on --master-iface or its first non-loopback interface)")
      ("master-iface", po::value(&master_iface), "interface for MASTER_ADDR; also GLOO_SOCKET_IFNAME")
      ("master-port", po::value(&master_port)->default_value(0), "MASTER_PORT (0: a free port rank 0 picks)")
      ("timeout", po::value(&timeout_s)->default_value(timeout_s), "seconds to wait for every task at the rendezvous")
      ("dry-run", "print each task's plan and exit instead of running the command")
      ("json", "with --dry-run: the plan as JSON");
  po::variables_map vm;
  std::optional<scheduling::BindMode> bind_mode;
  try {
    po::store(po::parse_command_line(split, argv, opts), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "exit before exec: 2 bad arguments, 3 rendezvous failed, 127 command not found; after: the command's\n";
      return 0;
    }
    bind_mode = scheduling::parse_bind(bind);
    if (!bind_mode) throw po::error("--bind must be none, closest or strict, not '" + bind + "'");
    if (gpu_bind != "visible" && gpu_bind != "single") throw po::error("--gpu-bind must be visible or single");
    if (master_port > 65535) throw po::error("--master-port must be below 65536");
    if (!master_iface.empty() && !common::plain_value(master_iface, 15)) throw po::error("--master-iface must be an interface name");
    if (command_at >= argc && !vm.count("dry-run")) throw po::error("no command to run: cnet-launch [options] -- command [args...]");
  } catch (const po::error& e) {
    std::cerr << "cnet-launch: " << e.what() << "\n" << opts;
    return 2;
  }

  launcher::LaunchRequest request;
  int port_fd = -1;
  try {
    auto boot = transport::PmixBootstrap::connect(std::chrono::seconds(timeout_s));
    request.placement = boot->placement();
    std::string master;
    if (request.placement.rank == 0) {
      std::string addr = master_addr;
      if (addr.empty()) addr = common::interface_address(master_iface);
      if (addr.empty()) throw std::runtime_error("interface '" + master_iface + "' has no IPv4 address on " + request.placement.hostname);
      port_fd = launcher::reserve_port(addr, master_port);
      master = addr + " " + std::to_string(master_port);
    }
    std::string chosen = boot->allgather_text("cnet.launch.master", master).at(0);
    auto space = chosen.find(' ');
    if (space == std::string::npos) throw std::runtime_error("rank 0 published no MASTER_ADDR/MASTER_PORT");
    request.master_addr = chosen.substr(0, space);
    request.master_port = static_cast<unsigned>(std::stoul(chosen.substr(space + 1)));
    request.rank_hosts = boot->allgather_text("cnet.launch.host", request.placement.hostname);
  } catch (const std::exception& e) {
    std::cerr << "cnet-launch: rendezvous failed: " << e.what() << "\n";
    return 3;
  }  // PMIx is finalized here, before exec, so the command may join PMIx itself

  request.bind = *bind_mode;
  request.gpu_bind = gpu_bind == "single" ? launcher::GpuBind::single : launcher::GpuBind::visible;
  request.master_iface = master_iface;
  request.interfaces = common::ipv4_interfaces();
  request.cuda_visible_devices = env_or("CUDA_VISIBLE_DEVICES");
  std::string gpus = env_or("SLURM_STEP_GPUS", request.cuda_visible_devices);
  if (auto parsed = common::parse_ranges(gpus); parsed && !gpus.empty()) request.step_gpus = *parsed;
  request.nccl_topo_file = env_or("NCCL_TOPO_FILE");
  request.topology_path = env_or("CNET_TOPOLOGY");
  request.allocated_rdma = common::split(env_or("CNET_RDMA_DEVICES"));
  request.allowed_cpus = scheduling::allowed_cpus();
  request.cpus_per_task = env_or("SLURM_CPUS_PER_TASK");
  request.omp_num_threads = env_or("OMP_NUM_THREADS");

  std::string problem;
  std::optional<topology::NodeTopology> topo;
  if (request.bind != scheduling::BindMode::none) topo = node_topology(problem);
  launcher::LaunchPlan plan = launcher::plan_launch(request, topo ? &*topo : nullptr);
  const auto& me = request.placement;
  if (!plan.error.empty()) {
    std::cerr << "cnet-launch: rank " << me.rank << " on " << me.hostname << ": " << plan.error << "\n";
    return 3;
  }
  if (!plan.warning.empty() && me.local_rank == 0)
    std::cerr << "cnet-launch: " << me.hostname << ": " << plan.warning << (problem.empty() ? "" : " (" + problem + ")") << "\n";

  if (vm.count("dry-run")) {
    if (vm.count("json")) {
      nlohmann::json j = {{"rank", me.rank}, {"host", me.hostname}, {"cpus", plan.cpus}, {"env", nlohmann::json::object()}};
      for (const auto& [n, v] : plan.variables) j["env"][n] = v;
      std::cout << j.dump() << std::endl;
    } else {
      std::ostringstream line;
      line << "rank " << me.rank << " on " << me.hostname << ":";
      for (const auto& [n, v] : plan.variables) line << " " << n << "=" << v;
      if (!plan.cpus.empty()) line << " cpus=" << common::compress_ranges(plan.cpus);
      std::cout << line.str() << std::endl;
    }
    return 0;
  }

  for (const auto& [n, v] : plan.variables) setenv(n.c_str(), v.c_str(), 1);
  if (!plan.cpus.empty())
    if (auto why = scheduling::bind_within_allowed(plan.cpus); !why.empty()) std::cerr << "cnet-launch: rank " << me.rank << ": " << why << "\n";
  if (port_fd >= 0) close(port_fd);
  execvp(argv[command_at], argv + command_at);
  std::cerr << "cnet-launch: cannot run '" << argv[command_at] << "': " << std::strerror(errno) << "\n";
  return 127;
}
