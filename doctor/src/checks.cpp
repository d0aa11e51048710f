#include "cnet/doctor/checks.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cnet/common/files.hpp"
#include "cnet/common/slurm_config.hpp"
#include "cnet/common/text.hpp"
#include "cnet/doctor/firewall.hpp"
#include "cnet/doctor/slurm_plugins.hpp"
#include "cnet/topology/check.hpp"

namespace cnet::doctor {
namespace {

// What a site may set in doctor.conf, and the defaults. A check drains (fail) only for a fault of this
// node that a job on it would hit; conditions many nodes share at once (a DNS outage, a cloud node not
// yet powered, a site NTP outage) are warnings, so a health check never drains the whole cluster.
const std::map<std::string, std::string> kSeverities = {
    {"clock", "fail"},       // offset beyond clock.max_offset_ms: munge credentials fail on this node
    {"clock.unsync", "warn"},  // no time source: a site NTP outage looks the same on every node
    {"swap", "warn"},     {"sysctl", "warn"},   {"memlock", "fail"}, {"limits", "warn"},
    {"nics", "fail"},     {"mtu", "fail"},      {"gres", "fail"},    {"discovery", "fail"},
    {"dns", "warn"},      {"firewall", "fail"},   {"plugins", "fail"},  // a plugin of another release is skipped
    {"munge", "fail"},    // munged not answering, or its key readable by others: Slurm's authentication
    {"stuck", "fail"},       // a job stuck completing on this node past stuck.after_s: its resources are not given back
    {"stuck.overtime", "warn"},  // a job running past its end by stuck.after_s (a site's OverTimeLimit may allow it)
    {"nic.tuning", "warn"},  // rings far below their maximum, a fast NIC's IRQs on one CPU or the far socket: slow, not broken
};
const std::map<std::string, std::string> kNumbers = {
    {"clock.max_offset_ms", "1000"}, {"net.core.rmem_max", "4194304"}, {"net.core.wmem_max", "4194304"},
    {"fs.file-max", "1000000"},      {"nofile", "65536"},              {"deadline.discovery", "15"},
    {"deadline.dns", "10"},          {"deadline.firewall", "5"},       {"deadline.scontrol", "10"},
    {"deadline.munge", "5"},         {"deadline.nics", "5"},         {"rings.min_percent", "25"},      {"irqs.min_mbps", "25000"},
    {"stuck.after_s", "600"},
};
const std::set<std::string> kLists = {"nics.exclude", "dns.exclude", "gres.exclude", "mtu.nics"};

Status severity(const DoctorConfig& c, const std::string& check) {
  std::string v = c.get(check);
  return v == "warn" ? Status::warn : v == "off" ? Status::skip : Status::fail;
}

std::string mb(std::uint64_t kb) { return std::to_string(kb / 1024) + " MB"; }

bool listed(const std::vector<std::string>& list, const std::string& a, const std::string& b = "") {
  return std::find(list.begin(), list.end(), a) != list.end() || (!b.empty() && std::find(list.begin(), list.end(), b) != list.end());
}

// A NIC's rings and interrupts, as the seed's NIC-queue advice has them: rings near their maximum so a
// burst is not dropped, and a fast NIC's IRQs spread over CPUs of its own NUMA node (one CPU cannot keep
// up with 100 Gb/s; the far socket adds a memory hop to every packet).
template <typename Add>
void nic_tuning_checks(const topology::NicSettings& n, const DoctorConfig& c, Add&& add) {
  const std::string name = n.name(), dev = n.netdev.empty() ? name : n.netdev;
  const std::uint64_t percent = c.number("rings.min_percent");
  if (n.rings && percent > 0) {
    const auto& r = *n.rings;
    bool rx_low = r.rx_max > 0 && r.rx * 100 < static_cast<std::uint64_t>(r.rx_max) * percent;
    bool tx_low = r.tx_max > 0 && r.tx * 100 < static_cast<std::uint64_t>(r.tx_max) * percent;
    std::string seen = "RX ring " + std::to_string(r.rx) + " of " + std::to_string(r.rx_max) + ", TX ring " + std::to_string(r.tx) + " of " +
                       std::to_string(r.tx_max);
    if (rx_low || tx_low)
      add("nic " + name + " rings", severity(c, "nic.tuning"), seen + " (under " + std::to_string(percent) + "% of the maximum: bursts are dropped)",
          "ethtool -G " + dev + " rx " + std::to_string(r.rx_max) + " tx " + std::to_string(r.tx_max) +
              " (and persist it: a udev rule or the interface's config)");
    else
      add("nic " + name + " rings", Status::pass, seen);
  }
  const std::uint64_t min_mbps = c.number("irqs.min_mbps");
  std::vector<const topology::IrqBinding*> known;
  for (const auto& irq : n.irqs)
    if (!irq.cpus.empty()) known.push_back(&irq);
  if (known.size() < 2 || min_mbps == 0 || n.speed_mbps < min_mbps) return;  // one vector, or a slow NIC: nothing to spread
  std::string fix_cpus = n.numa_cpus.empty() ? "CPUS" : common::compress_ranges(n.numa_cpus);
  std::string fix = "for irq in $(ls /sys/class/net/" + dev + "/device/msi_irqs); do echo " + fix_cpus +
                    " > /proc/irq/$irq/smp_affinity_list; done, or the driver's set_irq_affinity script; keep irqbalance "
                    "from moving them back (IRQBALANCE_BANNED_CPULIST or stop it)";
  bool one_cpu = std::all_of(known.begin(), known.end(), [&](const auto* irq) { return irq->cpus.size() == 1 && irq->cpus == known.front()->cpus; });
  unsigned local = irqs_on_numa_node(n), far = 0;
  if (!n.numa_cpus.empty())
    for (const auto* irq : known)
      far += std::none_of(irq->cpus.begin(), irq->cpus.end(), [&](unsigned cpu) {
        return std::find(n.numa_cpus.begin(), n.numa_cpus.end(), cpu) != n.numa_cpus.end();
      });
  std::string count = std::to_string(known.size());
  if (one_cpu)
    add("nic " + name + " irqs", severity(c, "nic.tuning"), "all " + count + " IRQs on CPU " + std::to_string(known.front()->cpus.front()) +
        " (one core takes every interrupt of a " + std::to_string(n.speed_mbps / 1000) + " Gb/s NIC)", fix);
  else if (far > 0)
    add("nic " + name + " irqs", severity(c, "nic.tuning"), std::to_string(far) + " of " + count + " IRQs only on CPUs outside its NUMA node " +
        std::to_string(n.numa_node) + " (CPUs " + fix_cpus + ")", fix);
  else
    add("nic " + name + " irqs", Status::pass, count + " IRQs" + (n.numa_cpus.empty() ? "" : ", " + std::to_string(local) + " only on its NUMA node " + std::to_string(n.numa_node)));
}

// What every check reads (the node's facts, the site's config) and writes (its results).
struct Checks {
  const NodeFacts& f;
  const DoctorConfig& c;
  std::vector<CheckResult> out;
  bool on(const char* key) const { return c.get(key) != "off"; }
  void add(std::string check, Status s, std::string seen, std::string fix = "") {
    if (s == Status::skip && seen.empty()) return;  // turned off
    out.push_back({std::move(check), s, std::move(seen), s == Status::pass || s == Status::skip ? "" : std::move(fix)});
  }
  // A condition usually alike on every node (the site's firewall policy, its NIC layout, a cluster-wide
  // Slurm upgrade, the slurmd unit's limits, how munge keys are installed). As HealthCheckProgram a fail
  // drains, and every node draining at once for one site setting is worse than the setting: there it
  // warns, saying so. Run by hand it fails as before.
  void add_site_wide(std::string check, Status s, std::string seen, std::string fix = "") {
    if (c.health_check && s == Status::fail) {
      s = Status::warn;
      seen += " (a warning under --health-check: if every node reports this, it is a site setting)";
    }
    add(std::move(check), s, std::move(seen), std::move(fix));
  }
};

void check_clock(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("clock") || k.on("clock.unsync")) {
    const double limit = static_cast<double>(c.number("clock.max_offset_ms"));
    if (!f.clock.known) k.add("clock", Status::skip, "clock state not readable");
    else if (limit > 0 && std::fabs(f.clock.offset_ms) > limit)
      k.add("clock", severity(c, "clock"), "offset " + std::to_string(std::lround(f.clock.offset_ms)) + " ms (limit " + c.get("clock.max_offset_ms") + " ms)",
          "check the time source (chronyc tracking); Slurm's munge credentials fail past a few minutes' skew");
    else if (!f.clock.synchronized)
      k.add("clock", severity(c, "clock.unsync"), "not synchronized to a time source",
          "run chronyd or ntpd (systemctl enable --now chrony) and wait until it has synced; if every node says so, the site's time source is down");
    else k.add("clock", Status::pass, "synchronized, offset " + std::to_string(std::lround(f.clock.offset_ms)) + " ms");
  }
}

void check_swap(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("swap")) {
    if (f.swap_kb > 0) k.add("swap", severity(c, "swap"), mb(f.swap_kb) + " of swap configured", "swapoff -a, and remove swap from /etc/fstab");
    else k.add("swap", Status::pass, "off");
  }
}

void check_sysctls(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  for (const char* key : {"net.core.rmem_max", "net.core.wmem_max", "fs.file-max"}) {
    std::uint64_t want = c.number(key);
    if (want == 0 || !k.on("sysctl")) continue;
    auto it = f.sysctl.find(key);
    if (it == f.sysctl.end()) {
      k.add(key, Status::skip, "not readable");
      continue;
    }
    std::uint64_t have = std::strtoull(it->second.c_str(), nullptr, 10);  // the kernel's text
    if (have < want) k.add(key, severity(c, "sysctl"), it->second + " (want at least " + c.get(key) + ")", "sysctl -w " + std::string(key) + "=" + c.get(key) + " and persist it in /etc/sysctl.d/");
    else k.add(key, Status::pass, it->second);
  }
}

void check_memlock(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("memlock")) {
    bool rdma = std::any_of(f.topology.nics.begin(), f.topology.nics.end(), [](const topology::Nic& n) { return n.is_rdma(); });
    if (!f.memlock_bytes) k.add("memlock", Status::pass, "unlimited");
    else
      k.add_site_wide("memlock", rdma ? severity(c, "memlock") : Status::warn,
          std::to_string(*f.memlock_bytes / 1024) + " KB locked memory limit" + (rdma ? " on a node with RDMA NICs" : ""),
          "RDMA registers memory: LimitMEMLOCK=infinity for slurmd (systemd) and '* - memlock unlimited' in /etc/security/limits.conf");
  }
}

void check_open_files(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (std::uint64_t want = c.number("nofile"); want > 0 && k.on("limits")) {
    if (f.open_files < want) k.add("nofile", severity(c, "limits"), std::to_string(f.open_files) + " open files (want at least " + c.get("nofile") + ")",
                                 "raise LimitNOFILE for slurmd and nofile in /etc/security/limits.conf");
    else k.add("nofile", Status::pass, f.open_files == UINT64_MAX ? "unlimited" : std::to_string(f.open_files));
  }
}

// A discovery that hung is this node's own fault (its driver or sysfs), and jobs would hang on it too.
void check_discovery(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (f.topology_hung) k.add("discovery", severity(c, "discovery"), f.topology_problem, "check the GPU driver (nvidia-smi; dmesg | grep -i xid) and reboot the node if it hangs");
  if (!f.nic_settings_problem.empty())
    k.add("discovery", severity(c, "discovery"), f.nic_settings_problem, "check the NIC driver (dmesg; ethtool -i on each NIC) and reboot the node if it hangs");
}

void check_links(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("nics") || k.on("mtu")) {
    if (!f.topology_problem.empty()) {
      if (!f.topology_hung) k.add("nics", Status::warn, "topology not readable: " + f.topology_problem, "run cnet-topo on the node to see why");
    } else {
      topology::CheckOptions options;
      options.fabric = c.list("mtu.nics").empty() ? f.job_fabric : topology::NicSelection::exactly(c.list("mtu.nics"));
      bool rdma = std::any_of(f.topology.nics.begin(), f.topology.nics.end(), [](const topology::Nic& n) { return n.is_rdma(); });
      const auto& excluded = c.list("nics.exclude");
      bool any = false;
      for (const auto& finding : topology::check_links(f.topology, options)) {
        if (finding.kind != topology::FindingKind::link_fault || listed(excluded, finding.subject)) continue;
        bool mtu = finding.aspect == "mtu";
        if (!k.on(mtu ? "mtu" : "nics")) continue;
        any = true;
        if (mtu) k.add_site_wide("mtu " + finding.subject, severity(c, "mtu"), finding.problem, finding.fix);  // NIC kinds alike on every node
        else k.add("nic " + finding.subject, severity(c, "nics"), finding.problem, finding.fix);
      }
      if (!any) {
        std::string seen = std::to_string(f.topology.nics.size()) + " NICs, no link problem";
        if (options.fabric.empty() && !rdma && f.topology.nics.size() > 1)
          seen += "; MTUs not compared (an Ethernet-only node: name the job fabric with mtu.nics in doctor.conf)";
        k.add("nics", Status::pass, seen);
      }
    }
  }
}

void check_stuck_jobs(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (f.held_jobs_known && (k.on("stuck") || k.on("stuck.overtime"))) {
    auto after = static_cast<std::int64_t>(c.number("stuck.after_s"));
    auto stuck = scheduling::stuck_jobs(f.held_jobs, f.now, after);
    if (auto it = stuck.find(f.hostname); it != stuck.end() && after > 0) {
      for (const auto& j : it->second)
        k.add("stuck job", severity(c, j.completing ? "stuck" : "stuck.overtime"), j.describe(),
            j.completing ? "find what keeps it: the job's processes still alive (ps -eo pid,stat,user,cmd; state D is a hung device or "
                           "filesystem), a hung epilog or GPU (nvidia-smi); kill them or reboot the node. cnet-doctor resumes the node "
                           "it drained once the job is gone"
                         : "scancel " + j.job_id + " if it should have ended (OverTimeLimit in slurm.conf allows jobs past their limit)");
    } else {
      k.add("stuck job", Status::pass, std::to_string(f.held_jobs.size()) + " running or completing jobs here, none past its end by " +
                                         scheduling::format_duration(after));
    }
  }
}

void check_nic_tuning(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("nic.tuning"))
    for (const auto& n : f.nic_settings)
      if (!listed(c.list("nics.exclude"), n.name(), n.rdma_device)) nic_tuning_checks(n, c, [&](auto&&... a) { k.add(std::forward<decltype(a)>(a)...); });
}

void check_gres(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("gres")) {
    unsigned gpus_declared = 0, missing = 0;
    for (const auto& d : f.gres_devices) {
      if (d.name == "gpu") ++gpus_declared;
      if (!d.present && !listed(c.list("gres.exclude"), d.file)) {
        ++missing;
        k.add("gres " + d.name, severity(c, "gres"), "gres.conf lists " + d.file + " but it does not exist",
            "load the driver, or correct gres.conf (cnet-topo --format gres writes it)");
      }
    }
    if (f.topology_problem.empty() && f.topology.gpus.size() > 0 && f.topology.gpus.size() < gpus_declared)
      k.add("gres gpu", Status::warn, "gres.conf declares " + std::to_string(gpus_declared) + " GPUs, discovery found " + std::to_string(f.topology.gpus.size()),
          "a GPU may have fallen off the bus (nvidia-smi; dmesg | grep -i xid)");
    if (!missing && !f.gres_devices.empty()) k.add("gres", Status::pass, std::to_string(f.gres_devices.size()) + " device files present");
  }
}

// Name resolution is shared by every node: a name that does not resolve is the same everywhere.
void check_dns(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("dns")) {
    std::vector<std::string> bad;
    for (const auto& [node, addr] : f.resolved)
      if (addr.empty() && !listed(c.list("dns.exclude"), node)) bad.push_back(node);
    if (!bad.empty())
      k.add("dns", severity(c, "dns"), std::to_string(bad.size()) + " of " + std::to_string(f.resolved.size()) + " nodes do not resolve: " +
          common::join(std::vector<std::string>(bad.begin(), bad.begin() + std::min<std::size_t>(bad.size(), 8)), ", ") + (bad.size() > 8 ? ", ..." : ""),
          "add them to DNS or /etc/hosts on every node (State=CLOUD nodes and dns.exclude are not checked)");
    if (!f.unresolved_in_time.empty())
      k.add("dns", Status::warn, std::to_string(f.unresolved_in_time.size()) + " lookups had not answered within " + c.get("deadline.dns") + " s",
          "check the resolvers in /etc/resolv.conf; slow lookups also slow every job start");
    if (bad.empty() && f.unresolved_in_time.empty() && !f.resolved.empty())
      k.add("dns", Status::pass, std::to_string(f.resolved.size()) + " nodes resolve" +
                               (f.cloud_nodes.empty() ? "" : " (" + std::to_string(f.cloud_nodes.size()) + " CLOUD nodes not checked)"));
  }
}

// A cnet plugin built for another Slurm release is skipped at load with one log line, and what it
// provides silently vanishes from jobs (gres/rdma's NIC variables, say).
void check_plugins(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("plugins") && !f.cnet_plugins.empty()) {
    std::vector<std::string> bad;
    for (const auto& p : f.cnet_plugins) {
      std::string name = std::filesystem::path(p.path).filename().string();
      if (!p.version) k.add("plugins", Status::warn, p.path + " is not readable as a Slurm plugin", "reinstall cnet-slurm-plugins");
      else if (!f.slurm_version) continue;
      else if (!slurm_would_load(*p.version, *f.slurm_version, p.spank))
        bad.push_back(name + " was built for Slurm " + version_text(*p.version));
    }
    if (!bad.empty())
      k.add_site_wide("plugins", severity(c, "plugins"), common::join(bad, "; ") + ", but this node runs Slurm " + version_text(*f.slurm_version) + ", which skips it",
          "install the cnet-slurm-plugins built for this Slurm, or build cnet against its configured source (README: site admin guide)");
    else if (!f.slurm_version) k.add("plugins", Status::skip, "the running Slurm's version is not known (no slurmd -V)");
    else k.add("plugins", Status::pass, std::to_string(f.cnet_plugins.size()) + " cnet plugins built for Slurm " + version_text(*f.slurm_version));
  }
}

// Slurm authenticates every RPC with munge: a node whose munged does not answer, or whose credentials
// do not decode, cannot talk to slurmctld; a key others can read lets them forge any user's jobs.
void check_munge(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("munge") && f.munge.used) {
    const MungeState& m = f.munge;
    std::string where = m.socket.empty() ? "munge's default socket" : m.socket;
    bool problem = false;
    if (m.probed && !m.encodes) {
      k.add("munge", severity(c, "munge"), m.problem + " (" + where + ")",
          "start munged (systemctl enable --now munge); slurm.conf's AuthInfo=socket= must name its socket");
      problem = true;
    } else if (m.probed && !m.decodes) {
      k.add("munge", severity(c, "munge"), "a credential made here does not decode here: " + m.problem,
          "munged's key or clock is off: the same /etc/munge/munge.key on every node (mode 0400, owner munge), time synchronized");
      problem = true;
    }
    if (m.key_exists && (m.key_mode & 077)) {
      char mode[16];
      std::snprintf(mode, sizeof mode, "%04o", m.key_mode);
      k.add_site_wide("munge key", severity(c, "munge"), m.key_file + " has mode " + mode + ": users other than its owner can read it",
          "chmod 0400 " + m.key_file + " (anyone who reads the key can forge credentials for any user)");
      problem = true;
    } else if (m.key_exists && m.key_owner != "munge") {
      k.add("munge key", Status::warn, m.key_file + " is owned by " + m.key_owner + ", not munge", "chown munge: " + m.key_file);
      problem = true;
    }
    if (!problem && m.probed) k.add("munge", Status::pass, "credentials encode and decode (" + where + ")");
    else if (!problem && m.key_exists) k.add("munge", Status::pass, "key " + m.key_file + " readable by its owner only");
  }
}

// The kernel's verdict on what matters: the controller's connection to this node's slurmd.
// Whether the rules block the port for sources of every kind (the private ranges, loopback, a public
// address), not only for the one address the controller is known by.
bool blocked_from_anywhere(const std::string& rules, Connection conn) {
  for (const char* source : {"10.0.0.1", "172.16.0.1", "192.168.0.1", "127.0.0.1", "100.64.0.1", "198.51.100.1"}) {
    conn.source = source;
    if (evaluate_firewall(rules, conn).kind != FirewallVerdict::blocked) return false;
  }
  return true;
}

void check_firewall(Checks& k) {
  const NodeFacts& f = k.f;
  const DoctorConfig& c = k.c;
  if (k.on("firewall")) {
    if (!f.firewall_known) {
      k.add("firewall", f.firewall_problem.find("did not answer") != std::string::npos ? Status::warn : Status::skip,
          "rules not readable: " + (f.firewall_problem.empty() ? std::string("no iptables-save") : f.firewall_problem));
    } else {
      Connection conn{f.controller_address, f.slurmd_port, interface_for(f.route_table, f.controller_address)};
      FirewallVerdict v = evaluate_firewall(f.firewall_rules, conn);
      std::string from = f.controller.empty() ? "the controller" : "slurmctld (" + f.controller + (conn.source.empty() ? "" : " at " + conn.source) + ")";
      const std::string seen = "'" + common::printable(v.rule, 160) + "' blocks Slurm port " + std::to_string(f.slurmd_port) + " for " + from;
      const std::string fix = "allow the Slurm ports (SlurmctldPort, SlurmdPort, SrunPortRange) and UCX/NCCL traffic between nodes";
      // Blocked whatever the source: this node's own fault. Blocked only for the address slurm.conf
      // names: slurmctld may in fact connect from another one, and a site policy is alike everywhere.
      if (v.kind == FirewallVerdict::blocked && blocked_from_anywhere(f.firewall_rules, conn))
        k.add("firewall", severity(c, "firewall"), seen, fix);
      else if (v.kind == FirewallVerdict::blocked)
        k.add_site_wide("firewall", severity(c, "firewall"), seen, fix);
      else if (v.kind == FirewallVerdict::unknown)
        k.add("firewall", Status::warn, "cannot tell whether '" + common::printable(v.rule, 160) + "' blocks Slurm port " + std::to_string(f.slurmd_port) + ": " + v.why,
            "check by hand that " + from + " reaches port " + std::to_string(f.slurmd_port));
      else k.add("firewall", Status::pass, "Slurm port " + std::to_string(f.slurmd_port) + " open to " + from);
    }
  }
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
  DoctorConfig c;
  c.values.insert(kSeverities.begin(), kSeverities.end());
  c.values.insert(kNumbers.begin(), kNumbers.end());
  for (const auto& [key, value] : kNumbers) c.numbers[key] = std::stoull(value);
  return c;
}

DoctorConfig DoctorConfig::parse(const std::string& text, const std::string& source) {
  DoctorConfig c = defaults();
  std::istringstream in(text);
  std::string line;
  static const std::regex kv(R"(^\s*([A-Za-z0-9_.\-]+)\s*=\s*(\S+)\s*$)");
  for (unsigned n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (common::trim(line).empty()) continue;
    auto where = source + ":" + std::to_string(n) + ": ";
    std::smatch m;
    if (!std::regex_match(line, m, kv)) throw std::runtime_error(where + "expected KEY = VALUE, found '" + common::printable(line, 80) + "'");
    std::string key = m[1], value = m[2];
    if (kSeverities.count(key)) {
      if (value != "fail" && value != "warn" && value != "off") throw std::runtime_error(where + key + " must be fail, warn or off, not '" + common::printable(value, 32) + "'");
    } else if (kNumbers.count(key)) {
      if (!std::regex_match(value, std::regex("[0-9]{1,19}"))) throw std::runtime_error(where + key + " must be a whole number (0 turns it off), not '" + common::printable(value, 32) + "'");
      if (key.starts_with("deadline.") && (value == "0" || value.size() > 3))
        throw std::runtime_error(where + key + " must be 1 to 999 seconds");
      c.numbers[key] = std::stoull(value);  // 19 digits at most: fits
    } else if (kLists.count(key)) {
      try {
        c.lists[key] = key == "dns.exclude" ? common::expand_hostlist(value) : common::split(value);
      } catch (const common::ConfigError& e) {
        throw std::runtime_error(where + key + ": " + e.what());
      }
    } else {
      std::vector<std::string> known;
      for (const auto& [k, _] : kSeverities) known.push_back(k);
      for (const auto& [k, _] : kNumbers) known.push_back(k);
      known.insert(known.end(), kLists.begin(), kLists.end());
      throw std::runtime_error(where + "unknown key '" + common::printable(key, 64) + "' (known: " + common::join(known, " ") + ")");
    }
    c.values[key] = value;
  }
  return c;
}

DoctorConfig DoctorConfig::load(const std::string& path) {
  try {
    return parse(common::read_file(path, 1u << 20), path);
  } catch (const common::FileError& e) {
    throw std::runtime_error(std::string("cannot read config: ") + e.what());
  }
}

std::string DoctorConfig::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? "" : it->second;
}

const std::vector<std::string>& DoctorConfig::list(const std::string& key) const {
  static const std::vector<std::string> none;
  auto it = lists.find(key);
  return it == lists.end() ? none : it->second;
}

std::uint64_t DoctorConfig::number(const std::string& key) const {
  auto it = numbers.find(key);
  if (it == numbers.end()) throw std::logic_error("doctor.conf has no number " + key);  // a typo in cnet's code
  return it->second;
}

std::chrono::seconds DoctorConfig::deadline(const std::string& what) const { return std::chrono::seconds(number("deadline." + what)); }

std::vector<CheckResult> run_checks(const NodeFacts& f, const DoctorConfig& c) {
  Checks k{f, c, {}};
  check_clock(k);
  check_swap(k);
  check_sysctls(k);
  check_memlock(k);
  check_open_files(k);
  check_discovery(k);
  check_links(k);
  check_stuck_jobs(k);
  check_nic_tuning(k);
  check_gres(k);
  check_dns(k);
  check_plugins(k);
  check_munge(k);
  check_firewall(k);
  return std::move(k.out);
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

NodeState node_state(const std::string& scontrol_line) {
  NodeState s;
  // `scontrol show node -o`: Key=Value fields separated by spaces; Reason= runs to the end of the line.
  std::string line = scontrol_line.substr(0, scontrol_line.find('\n'));
  if (auto at = line.find(" State="); at != std::string::npos) {
    std::string state = line.substr(at + 7, line.find(' ', at + 7) - at - 7);
    for (const auto& flag : common::split(state, '+'))
      if (flag == "DRAIN" || flag == "DRAINED" || flag == "DRAINING") s.drained = true;
    s.known = true;
  }
  if (auto at = line.find(" Reason="); at != std::string::npos) {
    s.reason = line.substr(at + 8);
    if (auto stamp = s.reason.rfind(" ["); stamp != std::string::npos && s.reason.back() == ']') s.reason.erase(stamp);
  }
  return s;
}

HealthAction health_action(const std::vector<CheckResult>& results, bool drained, const std::string& current_reason) {
  bool ours = current_reason.rfind(kDrainPrefix, 0) == 0;
  for (const auto& r : results)
    if (r.status == Status::fail) {
      std::string reason = std::string(kDrainPrefix) + " " + r.check + ": " + r.seen;
      for (auto& ch : reason)
        if (ch == '"' || ch == '\'' || ch == '\n' || static_cast<unsigned char>(ch) < 0x20) ch = ' ';
      if (reason.size() > 200) reason.resize(200);
      if (drained && (!ours || current_reason == reason)) return {};  // an admin's drain, or ours already
      return {HealthAction::drain, reason};
    }
  if (drained && ours) return {HealthAction::resume, ""};
  return {};
}

}  // namespace cnet::doctor
