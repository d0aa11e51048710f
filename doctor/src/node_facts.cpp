#include "cnet/doctor/node_facts.hpp"

#include <netdb.h>
#include <sys/timex.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cnet/common/files.hpp"
#include "cnet/common/host.hpp"
#include "cnet/common/slurm_config.hpp"
#include "cnet/common/text.hpp"
#include "cnet/topology/discover.hpp"

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

std::string resolve(const std::string& name) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0 || !res) return "";
  char text[INET6_ADDRSTRLEN] = {};
  void* addr = res->ai_family == AF_INET ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr)
                                         : static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr);
  inet_ntop(res->ai_family, addr, text, sizeof text);
  freeaddrinfo(res);
  return text;
}

}  // namespace

std::vector<SlurmNode> slurm_conf_nodes(const std::string& text) {
  std::vector<SlurmNode> out;
  for (const auto& line : config_lines(text, "slurm.conf")) {
    const std::string* name = line.find("NodeName");
    if (!name || common::equal_ignoring_case(*name, "DEFAULT")) continue;
    auto names = hosts_of(*name);
    auto addrs = line.find("NodeAddr") ? hosts_of(*line.find("NodeAddr")) : std::vector<std::string>{};
    for (std::size_t i = 0; i < names.size(); ++i)
      out.push_back({names[i], addrs.size() == names.size() ? addrs[i] : addrs.size() == 1 ? addrs[0] : names[i]});
  }
  return out;
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

  try {
    topology::DiscoveryOptions d;
    if (o.root != "/") d.sysfs_root = o.root, d.use_nvml = false;
    f.topology = topology::discover(d);
  } catch (const std::exception& e) {
    f.topology_problem = e.what();
  }
  f.topology.hostname = f.hostname;

  std::string conf = o.slurm_conf;
  if (conf.empty()) conf = std::getenv("SLURM_CONF") ? std::getenv("SLURM_CONF") : "/etc/slurm/slurm.conf";
  std::string conf_text = read_text(conf);
  std::vector<std::string> nodes = o.nodes;
  std::map<std::string, std::string> address_of;
  for (const auto& n : slurm_conf_nodes(conf_text)) {
    address_of[n.name] = n.address;
    if (o.nodes.empty()) nodes.push_back(n.name);
  }
  for (const auto& n : nodes) f.resolved[n] = resolve(address_of.count(n) ? address_of[n] : n);
  unsigned ctld = 6817, slurmd = 6818;
  for (const auto& l : config_lines(conf_text, conf)) {
    if (const std::string* v = l.find("SlurmctldPort")) ctld = static_cast<unsigned>(std::strtoul(v->c_str(), nullptr, 10));
    if (const std::string* v = l.find("SlurmdPort")) slurmd = static_cast<unsigned>(std::strtoul(v->c_str(), nullptr, 10));
  }
  f.slurm_ports = {ctld, slurmd};

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

  if (!o.firewall_rules_file.empty()) {
    try {
      f.firewall_rules = common::read_file(o.firewall_rules_file, 16u << 20);
      f.firewall_known = true;
    } catch (const common::FileError&) {
      f.firewall_known = false;
    }
  } else if (o.root == "/" && fs::exists("/usr/sbin/iptables-save")) {
    if (FILE* p = popen("/usr/sbin/iptables-save 2>/dev/null", "r")) {  // a fixed command, no user input
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) f.firewall_rules.append(buf, n);
      f.firewall_known = pclose(p) == 0;
    }
  }
  return f;
}

std::string snapshot_json(const NodeFacts& f) {
  json j = {{"format", "cnet.doctor.snapshot/1"}, {"taken_on", f.hostname}, {"sysctl", f.sysctl}, {"swap_kb", f.swap_kb},
            {"memlock", f.memlock_bytes ? json(*f.memlock_bytes) : json("unlimited")}, {"open_files", f.open_files}};
  json nics = json::array();
  for (const auto& n : f.topology.nics)
    nics.push_back({{"name", n.name}, {"kind", topology::to_string(n.kind)}, {"state", n.state}, {"mtu", n.mtu}, {"rate_gbps", n.rate_gbps}});
  j["nics"] = nics;
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
  } catch (const json::parse_error& e) {
    throw std::runtime_error(std::string("the template is not JSON: ") + e.what());
  }
  if (!want.is_object() || want.value("format", "") != "cnet.doctor.snapshot/1")
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
