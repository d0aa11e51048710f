#include "cnet/doctor/checks.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cnet/common/text.hpp"
#include "cnet/topology/check.hpp"

namespace cnet::doctor {
namespace {

const std::set<std::string> kModeKeys = {"clock", "swap", "memlock", "nics", "dns", "gres", "firewall"};
const std::set<std::string> kNumberKeys = {"clock.max_offset_ms", "net.core.rmem_max", "net.core.wmem_max", "fs.file-max", "nofile"};

Status mode_status(const std::string& mode) { return mode == "warn" ? Status::warn : Status::fail; }

std::string mb(std::uint64_t kb) { return std::to_string(kb / 1024) + " MB"; }

// Does an iptables-save rule drop or reject traffic to `port`?
bool blocks(const std::string& rule, unsigned port) {
  if (rule.find("-j DROP") == std::string::npos && rule.find("-j REJECT") == std::string::npos) return false;
  static const std::regex dport(R"(--dports? ([0-9:,]+))");
  std::smatch m;
  if (!std::regex_search(rule, m, dport)) return false;
  auto ports = common::parse_ranges(m[1].str(), 65536, ':');
  return ports && std::find(ports->begin(), ports->end(), port) != ports->end();
}

}  // namespace

const char* to_string(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::warn: return "warn";
    case Status::fail: return "fail";
    case Status::skip: return "skip";
  }
  return "?";
}

DoctorConfig DoctorConfig::defaults() {
  return {{{"clock", "fail"}, {"clock.max_offset_ms", "1000"}, {"swap", "warn"}, {"net.core.rmem_max", "4194304"},
           {"net.core.wmem_max", "4194304"}, {"fs.file-max", "1000000"}, {"memlock", "fail"}, {"nofile", "65536"},
           {"nics", "fail"}, {"dns", "fail"}, {"gres", "fail"}, {"firewall", "fail"}}};
}

DoctorConfig DoctorConfig::parse(const std::string& text, const std::string& source) {
  DoctorConfig c = defaults();
  std::istringstream in(text);
  std::string line;
  for (unsigned n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    static const std::regex kv(R"(^\s*([A-Za-z0-9_.\-]+)\s*=\s*(\S+)\s*$)"), blank(R"(^\s*$)");
    std::smatch m;
    if (std::regex_match(line, blank)) continue;
    auto where = source + ":" + std::to_string(n) + ": ";
    if (!std::regex_match(line, m, kv)) throw std::runtime_error(where + "expected KEY = VALUE, found '" + line + "'");
    std::string key = m[1], value = m[2];
    if (kModeKeys.count(key)) {
      if (value != "fail" && value != "warn" && value != "off") throw std::runtime_error(where + key + " must be fail, warn or off, not '" + value + "'");
    } else if (kNumberKeys.count(key)) {
      if (!std::regex_match(value, std::regex("[0-9]{1,19}"))) throw std::runtime_error(where + key + " must be a whole number (0 turns it off), not '" + value + "'");
    } else {
      std::string known;
      for (const auto& k : kModeKeys) known += k + " ";
      for (const auto& k : kNumberKeys) known += k + " ";
      throw std::runtime_error(where + "unknown key '" + key + "' (known: " + known + ")");
    }
    c.values[key] = value;
  }
  return c;
}

DoctorConfig DoctorConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read config " + path);
  std::stringstream s;
  s << in.rdbuf();
  return parse(s.str(), path);
}

std::string DoctorConfig::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? "" : it->second;
}

std::vector<CheckResult> run_checks(const NodeFacts& f, const DoctorConfig& c) {
  std::vector<CheckResult> out;
  auto on = [&](const char* key) { return c.get(key) != "off"; };
  auto add = [&](std::string check, Status s, std::string seen, std::string fix = "") {
    out.push_back({std::move(check), s, std::move(seen), s == Status::pass || s == Status::skip ? "" : std::move(fix)});
  };

  if (on("clock")) {
    double limit = std::stod(c.get("clock.max_offset_ms"));
    if (!f.clock.known) add("clock", Status::skip, "clock state not readable");
    else if (!f.clock.synchronized)
      add("clock", mode_status(c.get("clock")), "not synchronized to a time source",
          "run chronyd or ntpd (systemctl enable --now chrony) and wait until it has synced");
    else if (std::fabs(f.clock.offset_ms) > limit)
      add("clock", mode_status(c.get("clock")), "offset " + std::to_string(std::lround(f.clock.offset_ms)) + " ms (limit " + c.get("clock.max_offset_ms") + " ms)",
          "check the time source (chronyc tracking); Slurm's munge credentials fail past a few minutes' skew");
    else add("clock", Status::pass, "synchronized, offset " + std::to_string(std::lround(f.clock.offset_ms)) + " ms");
  }

  if (on("swap")) {
    if (f.swap_kb > 0) add("swap", mode_status(c.get("swap")), mb(f.swap_kb) + " of swap configured", "swapoff -a, and remove swap from /etc/fstab");
    else add("swap", Status::pass, "off");
  }

  for (const char* key : {"net.core.rmem_max", "net.core.wmem_max", "fs.file-max"}) {
    std::uint64_t want = std::stoull(c.get(key));
    if (want == 0) continue;
    auto it = f.sysctl.find(key);
    if (it == f.sysctl.end()) {
      add(key, Status::skip, "not readable");
      continue;
    }
    std::uint64_t have = std::strtoull(it->second.c_str(), nullptr, 10);
    if (have < want) add(key, Status::warn, it->second + " (want at least " + c.get(key) + ")", "sysctl -w " + std::string(key) + "=" + c.get(key) + " and persist it in /etc/sysctl.d/");
    else add(key, Status::pass, it->second);
  }

  if (on("memlock")) {
    bool rdma = std::any_of(f.topology.nics.begin(), f.topology.nics.end(), [](const topology::Nic& n) { return !n.rdma_device.empty(); });
    if (!f.memlock_bytes) add("memlock", Status::pass, "unlimited");
    else
      add("memlock", rdma ? mode_status(c.get("memlock")) : Status::warn,
          std::to_string(*f.memlock_bytes / 1024) + " KB locked memory limit" + (rdma ? " on a node with RDMA NICs" : ""),
          "RDMA registers memory: LimitMEMLOCK=infinity for slurmd (systemd) and '* - memlock unlimited' in /etc/security/limits.conf");
  }
  if (std::uint64_t want = std::stoull(c.get("nofile")); want > 0) {
    if (f.open_files < want) add("nofile", Status::warn, std::to_string(f.open_files) + " open files (want at least " + c.get("nofile") + ")",
                                 "raise LimitNOFILE for slurmd and nofile in /etc/security/limits.conf");
    else add("nofile", Status::pass, f.open_files == UINT64_MAX ? "unlimited" : std::to_string(f.open_files));
  }

  if (on("nics")) {
    if (!f.topology_problem.empty()) {
      add("nics", Status::warn, "topology not readable: " + f.topology_problem, "run cnet-topo on the node to see why");
    } else {
      bool any = false;
      for (const auto& finding : topology::check_links(f.topology)) {
        if (!finding.link_fault) continue;
        any = true;
        add("nic " + finding.subject, mode_status(c.get("nics")), finding.problem, finding.fix);
      }
      if (!any) add("nics", Status::pass, std::to_string(f.topology.nics.size()) + " NICs, no link problem");
    }
  }

  if (on("gres")) {
    unsigned gpus_declared = 0, missing = 0;
    for (const auto& d : f.gres_devices) {
      if (d.name == "gpu") ++gpus_declared;
      if (!d.present) {
        ++missing;
        add("gres " + d.name, mode_status(c.get("gres")), "gres.conf lists " + d.file + " but it does not exist",
            "load the driver, or correct gres.conf (cnet-topo --format gres writes it)");
      }
    }
    if (f.topology_problem.empty() && f.topology.gpus.size() > 0 && f.topology.gpus.size() < gpus_declared)
      add("gres gpu", Status::warn, "gres.conf declares " + std::to_string(gpus_declared) + " GPUs, discovery found " + std::to_string(f.topology.gpus.size()),
          "a GPU may have fallen off the bus (nvidia-smi; dmesg | grep -i xid)");
    if (!missing && !f.gres_devices.empty()) add("gres", Status::pass, std::to_string(f.gres_devices.size()) + " device files present");
  }

  if (on("dns")) {
    unsigned bad = 0;
    for (const auto& [node, addr] : f.resolved)
      if (addr.empty()) {
        ++bad;
        add("dns " + node, mode_status(c.get("dns")), node + " does not resolve", "add it to DNS or /etc/hosts on every node");
      }
    if (!bad && !f.resolved.empty()) add("dns", Status::pass, std::to_string(f.resolved.size()) + " nodes resolve");
  }

  if (on("firewall")) {
    if (!f.firewall_known) {
      add("firewall", Status::skip, "rules not readable (no iptables-save)");
    } else {
      std::istringstream rules(f.firewall_rules);
      std::string rule;
      bool blocked = false;
      while (std::getline(rules, rule))
        for (unsigned port : f.slurm_ports)
          if (!blocked && blocks(rule, port)) {
            blocked = true;
            add("firewall", mode_status(c.get("firewall")), "'" + rule + "' blocks Slurm port " + std::to_string(port),
                "allow the Slurm ports (SlurmctldPort, SlurmdPort, SrunPortRange) and UCX/NCCL traffic between nodes");
          }
      if (!blocked) add("firewall", Status::pass, "no rule blocks the Slurm ports");
    }
  }
  return out;
}

Status worst(const std::vector<CheckResult>& results) {
  Status w = Status::pass;
  for (const auto& r : results) {
    if (r.status == Status::fail) return Status::fail;
    if (r.status == Status::warn) w = Status::warn;
  }
  return w;
}

std::string results_json(const std::string& hostname, const std::vector<CheckResult>& results) {
  nlohmann::json j = {{"host", hostname}, {"status", to_string(worst(results))}, {"checks", nlohmann::json::array()}};
  for (const auto& r : results) j["checks"].push_back({{"check", r.check}, {"status", to_string(r.status)}, {"seen", r.seen}, {"fix", r.fix}});
  return j.dump(2) + "\n";
}

std::vector<common::MetricFamily> results_metrics(const std::string& hostname, const std::vector<CheckResult>& results, double now) {
  common::MetricFamily status{"cnet_doctor_check_status", "cnet-doctor verdict per check: 0 pass, 1 warn, 2 fail", "gauge", {}};
  double failed = 0;
  for (const auto& r : results) {
    if (r.status == Status::skip) continue;
    double v = r.status == Status::pass ? 0 : r.status == Status::warn ? 1 : 2;
    failed += r.status == Status::fail;
    status.samples.push_back({{{"node", hostname}, {"check", r.check}}, v});
  }
  return {status,
          {"cnet_doctor_failed_checks", "checks that failed on the last cnet-doctor run", "gauge", {{{{"node", hostname}}, failed}}},
          {"cnet_doctor_last_run_timestamp_seconds", "when cnet-doctor last ran (unix time)", "gauge", {{{{"node", hostname}}, now}}}};
}

std::string results_table(const std::vector<CheckResult>& results) {
  std::ostringstream out;
  for (const auto& r : results) {
    char line[64];
    std::snprintf(line, sizeof line, "%-5s %-22s ", to_string(r.status), r.check.c_str());
    out << line << r.seen << "\n";
    if (!r.fix.empty()) out << std::string(29, ' ') << "fix: " << r.fix << "\n";
  }
  return out.str();
}

HealthAction health_action(const std::vector<CheckResult>& results, bool drained, const std::string& current_reason) {
  bool ours = current_reason.rfind(kDrainPrefix, 0) == 0;
  for (const auto& r : results)
    if (r.status == Status::fail) {
      std::string reason = std::string(kDrainPrefix) + " " + r.check + ": " + r.seen;
      for (auto& ch : reason)
        if (ch == '"' || ch == '\'' || ch == '\n') ch = ' ';
      if (reason.size() > 200) reason.resize(200);
      if (drained && (!ours || current_reason == reason)) return {};  // an admin's drain, or ours already
      return {HealthAction::drain, reason};
    }
  if (drained && ours) return {HealthAction::resume, ""};
  return {};
}

}  // namespace cnet::doctor
