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

#include "cnet/topology/discover.hpp"

namespace cnet::doctor {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Kernel parameters worth comparing across nodes; the checks look at some of them.
const char* const kSysctls[] = {"net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog", "fs.file-max",
                                "vm.swappiness", "kernel.numa_balancing", "net.ipv4.tcp_timestamps"};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

fs::path under(const std::string& root, const std::string& absolute) {
  return root == "/" ? fs::path(absolute) : fs::path(root) / fs::path(absolute).relative_path();
}

// "Key=Value Key2=Value2" fields of a slurm.conf / gres.conf line (keys case-insensitive, as Slurm's).
std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    std::string key = word.substr(0, eq);
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out[key] = word.substr(eq + 1);
  }
  return out;
}

std::vector<std::string> config_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, joined;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line = trim(line);
    if (!line.empty() && line.back() == '\\') {
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    joined += line;
    if (!trim(joined).empty()) out.push_back(joined);
    joined.clear();
  }
  return out;
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

std::vector<std::string> expand_host_range(const std::string& pattern) {
  static const std::regex bracket(R"(^([^\[]*)\[([0-9,\-]+)\](.*)$)");
  std::smatch m;
  if (!std::regex_match(pattern, m, bracket)) return {pattern};
  std::vector<std::string> out;
  std::string list = m[2];
  std::istringstream parts(list);
  std::string part;
  while (std::getline(parts, part, ',')) {
    auto dash = part.find('-');
    std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
    if (lo.empty() || hi.empty()) continue;
    unsigned a = std::stoul(lo), b = std::stoul(hi);
    for (unsigned i = a; i <= b && out.size() < 100000; ++i) {
      std::string n = std::to_string(i);
      if (n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');  // cn[01-10] keeps its width
      for (auto& rest : expand_host_range(m[3])) out.push_back(std::string(m[1]) + n + rest);
    }
  }
  return out;
}

std::vector<SlurmNode> slurm_conf_nodes(const std::string& text) {
  std::vector<SlurmNode> out;
  for (const auto& line : config_lines(text)) {
    auto f = fields(line);
    if (!f.count("nodename") || f["nodename"] == "DEFAULT") continue;
    auto names = expand_host_range(f["nodename"]);
    auto addrs = f.count("nodeaddr") ? expand_host_range(f["nodeaddr"]) : std::vector<std::string>{};
    for (std::size_t i = 0; i < names.size(); ++i)
      out.push_back({names[i], addrs.size() == names.size() ? addrs[i] : addrs.size() == 1 ? addrs[0] : names[i]});
  }
  return out;
}

NodeFacts gather_facts(const GatherOptions& o) {
  NodeFacts f;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  f.hostname = o.hostname.empty() ? host : o.hostname;

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
    if (auto v = trim(read_text(under(o.root, rel))); !v.empty()) f.sysctl[key] = v;
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
  for (const auto& l : config_lines(conf_text)) {
    auto fl = fields(l);
    if (fl.count("slurmctldport")) ctld = static_cast<unsigned>(std::strtoul(fl["slurmctldport"].c_str(), nullptr, 10));
    if (fl.count("slurmdport")) slurmd = static_cast<unsigned>(std::strtoul(fl["slurmdport"].c_str(), nullptr, 10));
  }
  f.slurm_ports = {ctld, slurmd};

  // gres.conf beside slurm.conf: the device files promised for this node.
  std::string gres_text = read_text(fs::path(conf).parent_path() / "gres.conf");
  for (const auto& l : config_lines(gres_text)) {
    auto fl = fields(l);
    if (fl.count("nodename")) {
      auto hosts = expand_host_range(fl["nodename"]);
      if (std::find(hosts.begin(), hosts.end(), f.hostname) == hosts.end()) continue;
    }
    if (!fl.count("name") || !fl.count("file")) continue;
    for (const auto& file : expand_host_range(fl["file"]))
      f.gres_devices.push_back({fl["name"], file, fs::exists(under(o.root, file))});
  }

  if (!o.firewall_rules_file.empty()) {
    std::ifstream in(o.firewall_rules_file);
    f.firewall_known = static_cast<bool>(in);
    f.firewall_rules = read_text(o.firewall_rules_file);
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
