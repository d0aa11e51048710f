#include "cnet/doctor/node_facts.hpp"

#include <netdb.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/host.hpp"
#include "cnet/common/process.hpp"
#include "cnet/common/slurm_commands.hpp"
#include "cnet/common/slurm_config.hpp"
#include "cnet/common/text.hpp"
#include "cnet/doctor/slurm_plugins.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"

namespace cnet::doctor {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Kernel parameters worth comparing across nodes; the checks look at some of them.
const char* const kSysctls[] = {"net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog", "fs.file-max",
                                "vm.swappiness", "kernel.numa_balancing", "net.ipv4.tcp_timestamps"};

// A small procfs/sysfs/config file's text, or "" when it is missing or unreadable (a fact not known).
std::string read_text(const fs::path& p) {
  try {
    return common::read_file_if_exists(p, 16u << 20).value_or("");
  } catch (const common::FileError&) {
    return "";
  }
}

fs::path under(const std::string& root, const std::string& absolute) {
  return root == "/" ? fs::path(absolute) : fs::path(root) / fs::path(absolute).relative_path();
}

// slurm.conf / gres.conf lines; a damaged file reads as no lines (the checks then say what is missing).
std::vector<common::ConfigLine> config_lines(const std::string& text, const std::string& source) {
  try {
    return common::parse_config_lines(text, source);
  } catch (const common::ConfigError&) {
    return {};
  }
}

std::vector<std::string> hosts_of(const std::string& expression) {
  try {
    return common::expand_hostlist(expression);
  } catch (const common::ConfigError&) {
    return {};
  }
}

void read_limits(const std::string& root, NodeFacts& f) {
  std::istringstream in(read_text(under(root, "/proc/self/limits")));
  std::string line;
  auto soft = [](const std::string& l, std::size_t at) {
    std::istringstream words(l.substr(at));
    std::string v;
    words >> v;
    return v;
  };
  while (std::getline(in, line)) {
    if (line.rfind("Max locked memory", 0) == 0) {
      std::string v = soft(line, 17);
      f.memlock_bytes = v == "unlimited" ? std::nullopt : std::optional<std::uint64_t>(std::strtoull(v.c_str(), nullptr, 10));
    } else if (line.rfind("Max open files", 0) == 0) {
      std::string v = soft(line, 14);
      f.open_files = v == "unlimited" ? UINT64_MAX : std::strtoull(v.c_str(), nullptr, 10);
    }
  }
}

}  // namespace

std::vector<SlurmNode> slurm_conf_nodes(const std::string& text) {
  std::vector<SlurmNode> out;
  for (const auto& line : config_lines(text, "slurm.conf")) {
    const std::string* name = line.find("NodeName");
    if (!name || common::equal_ignoring_case(*name, "DEFAULT")) continue;
    auto names = hosts_of(*name);
    auto addrs = line.find("NodeAddr") ? hosts_of(*line.find("NodeAddr")) : std::vector<std::string>{};
    bool cloud = common::equal_ignoring_case(line.value("State"), "CLOUD");
    for (std::size_t i = 0; i < names.size(); ++i)
      out.push_back({names[i], addrs.size() == names.size() ? addrs[i] : addrs.size() == 1 ? addrs[0] : names[i], cloud});
  }
  return out;
}

std::map<std::string, std::string> resolve_all(const std::vector<std::string>& names, std::chrono::milliseconds deadline,
                                               std::vector<std::string>& late) {
  // One batch, answered in parallel by glibc's resolver threads and waited for until the deadline.
  // Lookups still in flight then keep using the batch, so it is freed only when none is.
  struct Batch {
    std::vector<std::string> names;
    addrinfo hints{};
    std::vector<gaicb> requests;
    std::vector<gaicb*> list;
  };
  auto* batch = new Batch{names, {}, std::vector<gaicb>(names.size()), {}};
  batch->hints.ai_socktype = SOCK_STREAM;
  for (std::size_t i = 0; i < names.size(); ++i) {
    batch->requests[i] = gaicb{};
    batch->requests[i].ar_name = batch->names[i].c_str();
    batch->requests[i].ar_request = &batch->hints;
    batch->list.push_back(&batch->requests[i]);
  }
  std::map<std::string, std::string> out;
  sigevent none{};
  none.sigev_notify = SIGEV_NONE;
  if (!names.empty() && getaddrinfo_a(GAI_NOWAIT, batch->list.data(), static_cast<int>(names.size()), &none) != 0) {
    late = names;
    delete batch;
    return out;
  }
  auto until = std::chrono::steady_clock::now() + deadline;
  for (std::size_t i = 0; i < names.size(); ++i) {
    gaicb& req = batch->requests[i];
    while (gai_error(&req) == EAI_INPROGRESS) {
      auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      timespec ts{static_cast<time_t>(left.count() / 1000000000), static_cast<long>(left.count() % 1000000000)};
      const gaicb* one[] = {&req};
      gai_suspend(one, 1, &ts);
    }
    int rc = gai_error(&req);
    if (rc == EAI_INPROGRESS) {
      gai_cancel(&req);
      late.push_back(names[i]);
      continue;
    }
    std::string text;
    if (rc == 0 && req.ar_result) {
      char buf[INET6_ADDRSTRLEN] = {};
      const addrinfo* r = req.ar_result;
      const void* addr = r->ai_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(r->ai_addr)->sin_addr)
                                                 : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(r->ai_addr)->sin6_addr);
      inet_ntop(r->ai_family, addr, buf, sizeof buf);
      text = buf;
      freeaddrinfo(req.ar_result);
    }
    out[names[i]] = text;
  }
  if (late.empty()) delete batch;  // else left to the resolver threads still using it; the process ends soon
  return out;
}

namespace {

// Discovery in a child process with a deadline: a hung driver (NVML) or a sysfs read that never
// returns is then a verdict about this node, not a health check that never ends.
void discover_within(const GatherOptions& o, NodeFacts& f) {
  topology::DiscoveryOptions d;
  if (o.root != "/") d.sysfs_root = o.root, d.use_nvml = false;
  d.hostname = o.hostname.empty() ? common::short_hostname() : o.hostname;  // the node checked, whatever tree it is read from
  auto r = common::run_in_child([&] { return topology::to_json(topology::discover(d)); }, o.deadlines.within(o.deadlines.discovery));
  if (r.timed_out) {
    f.topology_hung = true;
    f.topology_problem = "GPU/NIC discovery did not finish within " + std::to_string(o.deadlines.discovery.count()) +
                         " s (a hung GPU driver or a sysfs read that never returns)";
  } else if (!r.ok()) {
    f.topology_problem = r.output.empty() ? "discovery failed (exit " + std::to_string(r.exit_code) + ")" : r.output;
  } else {
    try {
      f.topology = topology::from_json(r.output);
    } catch (const std::exception& e) {
      f.topology_problem = e.what();
    }
  }
}

// The NICs' driver settings, read in a child: an ethtool ioctl goes into the driver, which can hang like
// a GPU driver can. What a link baseline records comes with them: every NIC's driver, or, with no NIC at
// all (a container's or a network namespace's veth), the driver of the interface job traffic leaves by.
void read_nic_settings_within(const GatherOptions& o, NodeFacts& f) {
  auto ethtool = o.ethtool ? o.ethtool : o.root == "/" ? topology::EthtoolReader(topology::read_ethtool) : nullptr;
  auto r = common::run_in_child(
      [&] {
        auto nics = topology::read_nic_settings(o.root, ethtool);
        std::string drivers = topology::driver_summaries(nics);
        if (drivers.empty()) drivers = topology::measured_drivers(nics, f.job_interface, ethtool);
        return json{{"nics", json::parse(topology::nic_settings_to_json(nics))}, {"drivers", drivers}}.dump();
      },
      o.deadlines.within(o.deadlines.nics));
  if (r.timed_out) {
    f.nic_settings_problem = "the NIC drivers' settings (ethtool, sysfs) were not read within " + std::to_string(o.deadlines.nics.count()) +
                             " s (a hung NIC driver)";
    return;
  }
  try {
    if (!r.ok()) throw std::runtime_error(r.output.empty() ? "exit " + std::to_string(r.exit_code) : r.output);
    json j = json::parse(r.output);
    f.nic_settings = topology::nic_settings_from_json(j.at("nics").dump());
    f.nic_drivers = j.at("drivers").get<std::string>();
  } catch (const std::exception& e) {
    f.nic_settings_problem = std::string("the NIC drivers' settings could not be read: ") + e.what();
  }
}

// SlurmctldHost=name or name(address); SlurmctldAddr= wins for the address.
void read_controller(const std::vector<common::ConfigLine>& lines, NodeFacts& f) {
  for (const auto& l : lines) {
    if (const std::string* host = l.find("SlurmctldHost"); host && f.controller.empty()) {
      auto open = host->find('(');
      f.controller = host->substr(0, open);
      if (open != std::string::npos && host->back() == ')') f.controller_address = host->substr(open + 1, host->size() - open - 2);
    }
    if (const std::string* v = l.find("ControlMachine"); v && f.controller.empty()) f.controller = *v;
    if (const std::string* v = l.find("ControlAddr"); v && f.controller_address.empty()) f.controller_address = *v;
    if (const std::string* v = l.find("SlurmctldAddr")) f.controller_address = *v;
    if (const std::string* v = l.find("SlurmctldPort")) f.slurmctld_port = common::parse_unsigned(*v, 5).value_or(6817);
    if (const std::string* v = l.find("SlurmdPort")) f.slurmd_port = common::parse_unsigned(*v, 5).value_or(6818);
  }
}

void read_firewall(const GatherOptions& o, NodeFacts& f) {
  if (!o.firewall_rules_file.empty()) {
    try {
      f.firewall_rules = common::read_file(o.firewall_rules_file, 16u << 20);
      f.firewall_known = true;
    } catch (const common::FileError& e) {
      f.firewall_problem = e.what();
    }
    return;
  }
  if (o.root != "/" || !fs::exists("/usr/sbin/iptables-save")) {
    f.firewall_problem = "no iptables-save here";
    return;
  }
  auto r = common::run_command({"/usr/sbin/iptables-save"}, o.deadlines.within(o.deadlines.firewall));
  if (r.timed_out) f.firewall_problem = "iptables-save did not answer within " + std::to_string(o.deadlines.firewall.count()) + " s";
  else if (!r.ok()) f.firewall_problem = "iptables-save failed (exit " + std::to_string(r.exit_code) + ")";
  else f.firewall_rules = r.output, f.firewall_known = true;
}

// munge's and unmunge's exit status is munge's error code: the ones a node's setup causes.
std::string munge_error(int code) {
  switch (code) {
    case 6: return "cannot reach munged's socket (exit 6)";
    case 7: return "munged timed out (exit 7)";
    case 11: return "the credential's MAC does not verify: another key (exit 11)";
    case 15: return "the credential expired: clock skew (exit 15)";
    case 16: return "the credential was made in the future: clock skew (exit 16)";
    default: return "exit " + std::to_string(code);
  }
}

// The owner of a file as /etc/passwd under root names it (no NSS call that could hang on a directory).
std::string owner_name(const std::string& root, uid_t uid) {
  std::istringstream passwd(read_text(under(root, "/etc/passwd")));
  for (std::string line; std::getline(passwd, line);) {
    auto fields = common::split(line, ':');
    if (fields.size() > 2 && fields[2] == std::to_string(uid)) return fields[0];
  }
  return std::to_string(uid);
}

// AuthType (auth/munge unless slurm.conf says otherwise) and AuthInfo's socket=; the key's mode and
// owner under root; on a live node a credential from `munge -n` handed back to `unmunge`.
void read_munge(const GatherOptions& o, const std::vector<common::ConfigLine>& conf, NodeFacts& f) {
  MungeState& m = f.munge;
  for (const auto& l : conf) {
    if (const std::string* v = l.find("AuthType")) m.used = *v == "auth/munge";
    if (const std::string* v = l.find("AuthInfo"))
      for (const auto& item : common::split(*v, ','))
        if (item.starts_with("socket=")) m.socket = item.substr(7);
  }
  if (!m.used) return;
  struct stat st {};
  if (::stat(under(o.root, m.key_file).c_str(), &st) == 0) {
    m.key_exists = true;
    m.key_mode = st.st_mode & 07777;
    m.key_owner = owner_name(o.root, st.st_uid);
  }
  if (o.root != "/") return;
  m.probed = true;
  std::vector<std::string> socket;
  if (!m.socket.empty()) socket = {"--socket", m.socket};
  std::vector<std::string> encode = {"munge", "--no-input"};
  encode.insert(encode.end(), socket.begin(), socket.end());
  auto made = common::run_command(encode, o.deadlines.within(o.deadlines.munge), {}, 64 << 10);
  if (!made.ok()) {
    m.problem = made.timed_out ? "munge -n did not answer within " + std::to_string(o.deadlines.munge.count()) + " s"
                : !made.started ? "munge is not installed"
                                : "munge -n: " + munge_error(made.exit_code);
    return;
  }
  m.encodes = true;
  m.problem = unmunge_problem(made.output, m.socket, o.deadlines.within(o.deadlines.munge));
  m.decodes = m.problem.empty();
  // A second one for other nodes to decode: munged refuses a credential it has already decoded (a replay),
  // and the nodes of a test cluster share one munged.
  if (auto other = common::run_command(encode, o.deadlines.within(o.deadlines.munge), {}, 64 << 10); other.ok()) m.credential = common::trim(other.output);
}

// The cnet plugins this node's Slurm would load: gres_rdma.so and job_submit_cnet.so from PluginDir,
// cnet.so from plugstack.conf (absolute, or relative to PluginDir).
void find_cnet_plugins(const GatherOptions& o, const std::vector<common::ConfigLine>& conf, const fs::path& conf_path, NodeFacts& f) {
  std::vector<std::string> dirs;
  std::string plugstack = (conf_path.parent_path() / "plugstack.conf").string();
  for (const auto& l : conf) {
    if (const std::string* v = l.find("PluginDir")) dirs = common::split(*v, ':');
    if (const std::string* v = l.find("PlugStackConfig")) plugstack = *v;
  }
  if (dirs.empty()) dirs = {"/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm", "/usr/local/lib/slurm"};
  std::set<std::string> seen;
  auto add = [&](const fs::path& p, bool spank) {
    std::error_code ec;
    fs::path real = under(o.root, p.string());
    if (!fs::is_regular_file(real, ec) || !seen.insert(fs::weakly_canonical(real, ec).string()).second) return;
    f.cnet_plugins.push_back({p.string(), plugin_version(real), spank});
  };
  for (const auto& d : dirs)
    for (const char* name : {"job_submit_cnet.so", "gres_rdma.so"}) add(fs::path(d) / name, false);
  std::istringstream in(read_text(under(o.root, plugstack)));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream w(line.substr(0, line.find('#')));
    std::string flag, path;
    if (!(w >> flag >> path) || fs::path(path).filename() != "cnet.so") continue;
    if (fs::path(path).is_absolute()) add(path, true);
    else
      for (const auto& d : dirs) add(fs::path(d) / path, true);
  }
}

// This node's running and completing jobs from slurmctld, end times as unix seconds (SLURM_TIME_FORMAT).
void read_held_jobs(const GatherOptions& o, const std::string& slurm_conf, NodeFacts& f) {
  if (o.root != "/") return;
  auto r = common::run_command({common::slurm_command("squeue"), "-h", "-w", f.hostname, "-t", "RUNNING,COMPLETING", "-o", "%i|%T|%e|%u|%N"},
                               o.deadlines.within(o.deadlines.squeue), {{"SLURM_CONF", slurm_conf}, {"SLURM_TIME_FORMAT", "%s"}}, 1 << 20);
  if (!r.ok()) return;  // no Slurm here, or slurmctld not answering: not known, not judged
  f.held_jobs = scheduling::parse_squeue_jobs(r.output);
  f.held_jobs_known = true;
}

void find_job_interface(const GatherOptions& o, NodeFacts& f) {
  if (!f.job_fabric.empty()) {  // the first interface (by name) the job's variables select
    std::error_code ec;
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(under(o.root, "/sys/class/net"), ec)) names.insert(e.path().filename().string());
    for (const auto& name : names)
      if (name != "lo" && f.job_fabric.selects(name)) {
        f.job_interface = name;
        break;
      }
  }
  if (f.job_interface.empty() && o.root == "/")
    if (auto it = f.resolved.find(f.hostname); it != f.resolved.end()) f.job_interface = common::interface_with_address(it->second);
  if (!f.job_interface.empty())
    f.job_interface_mtu = common::parse_unsigned(common::trim(read_text(under(o.root, "/sys/class/net/" + f.job_interface + "/mtu"))), 6).value_or(0);
}

std::optional<std::uint32_t> running_slurm_version(const GatherOptions& o) {
  if (!o.slurm_version.empty()) return parse_slurm_version(o.slurm_version);
  if (o.root != "/") return std::nullopt;
  for (const auto& argv : {std::vector<std::string>{common::slurm_command("slurmd"), "-V"},
                           std::vector<std::string>{common::slurm_command("scontrol"), "--version"}}) {
    auto r = common::run_command(argv, o.deadlines.within(std::chrono::seconds(5)));
    if (r.ok())
      if (auto v = parse_slurm_version(r.output)) return v;
  }
  return std::nullopt;
}


}  // namespace

std::string unmunge_problem(const std::string& credential, const std::string& socket, std::chrono::milliseconds deadline) {
  char path[] = "/tmp/cnet-doctor-munge-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ::write(fd, credential.data(), credential.size()) != static_cast<ssize_t>(credential.size())) {
    if (fd >= 0) ::close(fd), ::unlink(path);
    return "cannot write a scratch file in /tmp to hand the credential to unmunge";
  }
  ::close(fd);
  std::vector<std::string> decode = {"unmunge", "--input", path};
  if (!socket.empty()) decode.insert(decode.end(), {"--socket", socket});
  auto back = common::run_command(decode, deadline, {}, 64 << 10);
  ::unlink(path);
  if (back.ok()) return "";
  if (back.timed_out) return "unmunge did not answer within " + std::to_string((deadline.count() + 999) / 1000) + " s";
  return back.started ? "unmunge: " + munge_error(back.exit_code) : "unmunge is not installed";
}

std::chrono::milliseconds Deadlines::within(std::chrono::milliseconds own) const {
  if (finish_by == std::chrono::steady_clock::time_point::max()) return own;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(finish_by - std::chrono::steady_clock::now());
  return std::clamp(left, std::chrono::milliseconds(1), own);  // an overrun step still runs, at once given up
}

std::optional<double> chrony_offset_ms(const std::string& tracking_csv) {
  // Reference ID, name, stratum, reference time, system time offset, last offset, RMS offset, ... (s)
  auto fields = common::split(common::trim(tracking_csv.substr(0, tracking_csv.find('\n'))));
  if (fields.size() < 6) return std::nullopt;
  double biggest = 0;
  for (std::size_t i : {4u, 5u}) {
    char* end = nullptr;
    double seconds = std::strtod(fields[i].c_str(), &end);
    if (end == fields[i].c_str() || *end != '\0' || !std::isfinite(seconds)) return std::nullopt;
    biggest = std::max(biggest, std::fabs(seconds) * 1000);
  }
  return biggest;
}

NodeFacts gather_facts(const GatherOptions& o) {
  NodeFacts f;
  f.hostname = o.hostname.empty() ? common::short_hostname() : o.hostname;

  if (o.live_process_limits) {
    timex tx{};
    int state = adjtimex(&tx);
    f.clock.known = state != -1;
    f.clock.synchronized = state != TIME_ERROR && !(tx.status & STA_UNSYNC);
    f.clock.offset_ms = static_cast<double>(tx.offset) / ((tx.status & STA_NANO) ? 1e6 : 1e3);
    f.clock.max_error_ms = static_cast<double>(tx.maxerror) / 1e3;
    // The kernel clamps the offset it reports to 500 ms, below any sensible limit: chrony (Debian's
    // time daemon) tells the real one, however large.
    auto chrony = common::run_command({"chronyc", "-c", "tracking"}, o.deadlines.within(std::chrono::seconds(2)), {}, 4096);
    if (chrony.ok())
      if (auto offset = chrony_offset_ms(chrony.output)) f.clock.offset_ms = *offset;
    f.job_fabric = topology::NicSelection::from_environment(std::getenv);
  }

  std::istringstream swaps(read_text(under(o.root, "/proc/swaps")));
  std::string line;
  std::getline(swaps, line);  // header
  while (std::getline(swaps, line)) {
    std::istringstream w(line);
    std::string file, type;
    std::uint64_t size = 0;
    if (w >> file >> type >> size) f.swap_kb += size;
  }
  for (const char* key : kSysctls) {
    std::string rel = "/proc/sys/" + std::string(key);
    for (auto& c : rel) if (c == '.') c = '/';
    if (auto v = common::trim(read_text(under(o.root, rel))); !v.empty()) f.sysctl[key] = v;
  }
  read_limits(o.root, f);
  f.route_table = read_text(under(o.root, "/proc/net/route"));

  discover_within(o, f);
  f.topology.hostname = f.hostname;

  std::string conf = o.slurm_conf;
  if (conf.empty()) conf = std::getenv("SLURM_CONF") ? std::getenv("SLURM_CONF") : "/etc/slurm/slurm.conf";
  std::string conf_text = read_text(conf);
  auto lines = config_lines(conf_text, conf);
  read_controller(lines, f);
  std::vector<std::string> nodes = o.nodes, lookups;
  std::map<std::string, std::string> address_of;
  for (const auto& n : slurm_conf_nodes(conf_text)) {
    address_of[n.name] = n.address;
    if (n.cloud) f.cloud_nodes.push_back(n.name);
    else if (o.nodes.empty() && (!o.only_this_node || n.name == f.hostname)) nodes.push_back(n.name);
  }
  for (const auto& n : nodes) lookups.push_back(address_of.count(n) ? address_of[n] : n);
  if (f.controller_address.empty() && !f.controller.empty()) lookups.push_back(f.controller);
  std::vector<std::string> late;
  auto answers = resolve_all(lookups, o.deadlines.within(o.deadlines.dns), late);
  for (const auto& n : nodes) {
    const std::string& key = address_of.count(n) ? address_of[n] : n;
    if (answers.count(key)) f.resolved[n] = answers[key];
    else f.unresolved_in_time.push_back(n);
  }
  if (f.controller_address.empty() && answers.count(f.controller)) f.controller_address = answers[f.controller];

  // gres.conf beside slurm.conf: the device files promised for this node.
  fs::path gres_conf = fs::path(conf).parent_path() / "gres.conf";
  for (const auto& l : config_lines(read_text(gres_conf), gres_conf.string())) {
    if (const std::string* nodes = l.find("NodeName")) {
      auto hosts = hosts_of(*nodes);
      if (std::find(hosts.begin(), hosts.end(), f.hostname) == hosts.end()) continue;
    }
    const std::string *name = l.find("Name"), *file = l.find("File");
    if (!name || !file) continue;
    for (const auto& path : hosts_of(*file)) f.gres_devices.push_back({*name, path, fs::exists(under(o.root, path))});
  }
  find_job_interface(o, f);
  read_firewall(o, f);
  f.munge.used = !conf_text.empty();  // no slurm.conf: not a Slurm node, nothing to authenticate to
  read_munge(o, lines, f);
  find_cnet_plugins(o, lines, conf, f);
  if (!f.cnet_plugins.empty()) f.slurm_version = running_slurm_version(o);
  f.now = static_cast<std::int64_t>(std::time(nullptr));
  if (!conf_text.empty()) read_held_jobs(o, conf, f);
  read_nic_settings_within(o, f);
  return f;
}

unsigned irqs_on_numa_node(const topology::NicSettings& n) {
  unsigned local = 0;
  for (const auto& irq : n.irqs)
    local += !irq.cpus.empty() && std::all_of(irq.cpus.begin(), irq.cpus.end(), [&](unsigned cpu) {
      return std::find(n.numa_cpus.begin(), n.numa_cpus.end(), cpu) != n.numa_cpus.end();
    });
  return local;
}

std::string snapshot_json(const NodeFacts& f) {
  json j = {{"format", "cnet.doctor.snapshot/1"}, {"taken_on", f.hostname}, {"sysctl", f.sysctl}, {"swap_kb", f.swap_kb},
            {"memlock", f.memlock_bytes ? json(*f.memlock_bytes) : json("unlimited")}, {"open_files", f.open_files}};
  json nics = json::array();
  for (const auto& n : f.topology.nics)
    nics.push_back({{"name", n.name}, {"kind", topology::to_string(n.kind)}, {"state", n.state}, {"mtu", n.mtu}, {"rate_gbps", n.rate_gbps}});
  j["nics"] = nics;
  // What the driver is set to, by NIC name (IRQ numbers differ between alike nodes: only where they run).
  json settings = json::object();
  for (const auto& n : f.nic_settings) {
    json s = {{"driver", n.driver}, {"driver_version", n.driver_version}, {"firmware", n.firmware},
              {"rx_queues", n.rx_queues}, {"tx_queues", n.tx_queues}, {"irqs", n.irqs.size()}, {"offloads", n.offloads}};
    if (n.rings) s["rings"] = {{"rx", n.rings->rx}, {"rx_max", n.rings->rx_max}, {"tx", n.rings->tx}, {"tx_max", n.rings->tx_max}};
    if (n.channels) s["channels"] = {{"combined", n.channels->combined}, {"rx", n.channels->rx}, {"tx", n.channels->tx}};
    if (!n.numa_cpus.empty() && !n.irqs.empty()) s["irqs_on_own_numa_node"] = irqs_on_numa_node(n);
    settings[n.name()] = s;
  }
  j["nic_settings"] = settings;
  if (f.job_interface_mtu) j["job_network"] = {{"mtu", f.job_interface_mtu}};  // names may differ; the MTU must not
  for (const auto& n : f.topology.nics)  // and its rate, where the interface is a NIC discovery knows
    if (!f.job_interface.empty() && n.netdev == f.job_interface && n.rate_gbps) j["job_network"]["rate_gbps"] = n.rate_gbps;
  json gpus = json::array();
  for (const auto& g : f.topology.gpus) gpus.push_back(g.model.empty() ? g.vendor : g.model);
  j["gpus"] = gpus;
  j["cpu"] = {{"vendor", f.topology.cpu.vendor}, {"model", f.topology.cpu.model}, {"pus", f.topology.pus}};
  return j.dump(2) + "\n";
}

std::vector<std::string> compare_snapshot(const std::string& template_json, const NodeFacts& facts) {
  json want;
  try {
    want = json::parse(template_json);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("the template is not JSON: ") + e.what());
  }
  if (!want.is_object() || want["format"] != "cnet.doctor.snapshot/1")
    throw std::runtime_error("the template is not a cnet-doctor snapshot (make one with cnet-doctor snapshot)");
  json have = json::parse(snapshot_json(facts));
  json a = want.flatten(), b = have.flatten();
  std::vector<std::string> out;
  for (auto& [key, value] : a.items()) {
    if (key == "/taken_on") continue;
    if (!b.contains(key)) out.push_back(key.substr(1) + ": template " + value.dump() + ", here missing");
    else if (b[key] != value) out.push_back(key.substr(1) + ": template " + value.dump() + ", here " + b[key].dump());
  }
  for (auto& [key, value] : b.items())
    if (key != "/taken_on" && !a.contains(key)) out.push_back(key.substr(1) + ": template missing, here " + value.dump());
  return out;
}

}  // namespace cnet::doctor
