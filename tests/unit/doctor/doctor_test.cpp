#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "../topology/fake_nics.hpp"
#include "../topology/test_support.hpp"
#include "cnet/common/text.hpp"
#include "cnet/doctor/checks.hpp"
#include "cnet/doctor/job_mode.hpp"

using namespace cnet::doctor;
using cnet::topology::testing::TempDir;

namespace {

const CheckResult* find(const std::vector<CheckResult>& results, const std::string& check) {
  for (const auto& r : results)
    if (r.check == check) return &r;
  return nullptr;
}

// A fake node: /proc files, a sysfs tree with one NIC, slurm.conf and gres.conf beside it.
struct FakeNode {
  TempDir dir;
  FakeNode() {
    dir.write("proc/swaps", "Filename Type Size Used Priority\n/swapfile file 2097148 0 -2\n");
    dir.write("proc/sys/net/core/rmem_max", "212992\n");
    dir.write("proc/sys/net/core/wmem_max", "16777216\n");
    dir.write("proc/sys/fs/file-max", "9223372036854775807\n");
    dir.write("proc/self/limits",
              "Limit                     Soft Limit           Hard Limit           Units\n"
              "Max open files            1024                 524288               files\n"
              "Max locked memory         65536                65536                bytes\n");
    dir.write("sys/class/net/eth0/mtu", "1500\n");
    dir.write("sys/class/net/eth0/operstate", "up\n");
    dir.write("etc/slurm/slurm.conf",
              "ClusterName=c\nSlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort=7817\nSlurmdPort=7818\n"
              "NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=4\nNodeName=no-such-host.invalid CPUs=4\n"
              "NodeName=burst1 State=CLOUD CPUs=4\n");
    dir.write("etc/slurm/gres.conf", "NodeName=n1 Name=gpu File=/dev/nvidia[0-1]\nNodeName=n2 Name=gpu File=/dev/nvidia[0-3]\n");
    dir.write("dev/nvidia0", "");
  }
  GatherOptions options() const {
    GatherOptions o;
    o.root = dir.path().string();
    o.slurm_conf = (dir.path() / "etc/slurm/slurm.conf").string();
    o.hostname = "n1";
    o.live_process_limits = false;
    return o;
  }
};

}  // namespace

TEST(Doctor, SlurmConfNodes) {
  auto nodes = slurm_conf_nodes("NodeName=DEFAULT CPUs=2\nNodeName=a[1-2] NodeAddr=10.0.0.[1-2] \\\n  CPUs=4\n");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].name, "a2");
  EXPECT_EQ(nodes[1].address, "10.0.0.2");
}

TEST(Doctor, FactsFromAFakeNode) {
  FakeNode node;
  NodeFacts f = gather_facts(node.options());
  EXPECT_EQ(f.swap_kb, 2097148u);
  EXPECT_EQ(f.sysctl.at("net.core.rmem_max"), "212992");
  ASSERT_TRUE(f.memlock_bytes);
  EXPECT_EQ(*f.memlock_bytes, 65536u);
  EXPECT_EQ(f.open_files, 1024u);
  EXPECT_EQ(f.slurmctld_port, 7817u);
  EXPECT_EQ(f.slurmd_port, 7818u);
  EXPECT_EQ(f.controller, "ctl");
  EXPECT_EQ(f.controller_address, "127.0.0.1");
  EXPECT_EQ(f.cloud_nodes, std::vector<std::string>{"burst1"});
  EXPECT_EQ(f.resolved.count("burst1"), 0u) << "a CLOUD node is not looked up";
  ASSERT_EQ(f.gres_devices.size(), 2u) << "only n1's lines";
  EXPECT_TRUE(f.gres_devices[0].present);
  EXPECT_FALSE(f.gres_devices[1].present);
  EXPECT_EQ(f.resolved.at("n1"), "127.0.0.1");
  EXPECT_EQ(f.resolved.at("no-such-host.invalid"), "");
}

// As HealthCheckProgram, every node at once: each resolves itself (and the controller), not every node.
TEST(Doctor, AHealthCheckResolvesOnlyThisNode) {
  FakeNode node;
  GatherOptions o = node.options();
  o.only_this_node = true;
  NodeFacts f = gather_facts(o);
  EXPECT_EQ(f.resolved.size(), 1u);
  EXPECT_EQ(f.resolved.at("n1"), "127.0.0.1");
  EXPECT_EQ(f.controller_address, "127.0.0.1");
}

// adjtimex clamps the offset it reports to 500 ms, so a limit of 1000 ms could never fire: chrony's own
// figure can be any size.
TEST(Doctor, ClockOffsetFromChrony) {
  auto ms = chrony_offset_ms("A9FEA97B,169.254.169.123,4,1634307400.123,-2.500001161,0.000000779,0.000006170,-2.331,-0.000,0.010,0.000318,0.000170,16.1,Normal\n");
  ASSERT_TRUE(ms);
  EXPECT_NEAR(*ms, 2500.001, 0.01);
  EXPECT_FALSE(chrony_offset_ms("506 Cannot talk to daemon\n"));
  EXPECT_FALSE(chrony_offset_ms("A,b,4,1.0,x,0.1\n"));
}

// The steps' own deadlines add up past slurmd's 60 s for a HealthCheckProgram: each gets no more than
// what is left of the run.
TEST(Doctor, EveryStepFitsTheRunsBudget) {
  using namespace std::chrono_literals;
  Deadlines d;
  EXPECT_EQ(d.within(15s), 15s) << "no budget: a step's own deadline";
  d.finish_by = std::chrono::steady_clock::now() + 3s;
  EXPECT_LE(d.within(15s), 3s);
  EXPECT_GT(d.within(15s), 2s);
  EXPECT_EQ(d.within(1s), 1s);
  d.finish_by = std::chrono::steady_clock::now() - 1s;
  EXPECT_EQ(d.within(15s), 1ms) << "spent: a step gives up at once";
}

TEST(Doctor, ChecksJudgeTheFacts) {
  FakeNode node;
  NodeFacts f = gather_facts(node.options());
  f.clock = {true, true, 2500, 10};
  auto r = run_checks(f, DoctorConfig::defaults());
  EXPECT_EQ(find(r, "clock")->status, Status::fail);
  EXPECT_NE(find(r, "clock")->seen.find("offset 2500 ms (limit 1000 ms)"), std::string::npos);
  EXPECT_EQ(find(r, "swap")->status, Status::warn);
  EXPECT_EQ(find(r, "net.core.rmem_max")->status, Status::warn);
  EXPECT_NE(find(r, "net.core.rmem_max")->fix.find("sysctl -w net.core.rmem_max=4194304"), std::string::npos);
  EXPECT_EQ(find(r, "net.core.wmem_max")->status, Status::pass);
  EXPECT_EQ(find(r, "memlock")->status, Status::warn) << "no RDMA NIC on this node";
  EXPECT_EQ(find(r, "nofile")->status, Status::warn);
  EXPECT_EQ(find(r, "gres gpu")->status, Status::fail);
  EXPECT_NE(find(r, "gres gpu")->seen.find("/dev/nvidia1"), std::string::npos);
  EXPECT_EQ(find(r, "dns")->status, Status::warn) << "a name that does not resolve does not resolve on every node";
  EXPECT_NE(find(r, "dns")->seen.find("1 of 3 nodes do not resolve: no-such-host.invalid"), std::string::npos) << find(r, "dns")->seen;
  EXPECT_EQ(find(r, "firewall")->status, Status::skip);
  EXPECT_EQ(worst(r), Status::fail);

  f.clock = {true, false, 0, 0};
  EXPECT_NE(find(run_checks(f, DoctorConfig::defaults()), "clock")->seen.find("not synchronized"), std::string::npos);
}

// What slurmd runs on every node at once must not drain nodes for what they all share.
TEST(Doctor, SharedConditionsWarnInsteadOfDraining) {
  NodeFacts f;
  f.clock = {true, false, 3, 100};  // a site NTP outage: unsynchronised, still close
  f.resolved = {{"cn1", "10.0.0.1"}, {"cloud7", ""}};
  auto r = run_checks(f, DoctorConfig::defaults());
  EXPECT_EQ(find(r, "clock")->status, Status::warn);
  EXPECT_EQ(find(r, "dns")->status, Status::warn);
  EXPECT_NE(worst(r), Status::fail);
  EXPECT_EQ(find(run_checks(f, DoctorConfig::parse("dns.exclude = cloud[1-8]\n", "t")), "dns")->status, Status::pass);
  auto strict = DoctorConfig::parse("dns = fail\nclock.unsync = fail\n", "t");  // a site that wants them to drain
  EXPECT_EQ(find(run_checks(f, strict), "dns")->status, Status::fail);
  EXPECT_EQ(find(run_checks(f, strict), "clock")->status, Status::fail);
}

// A 1500 management port next to a 9000 storage port on an Ethernet-only node is not a mismatch; the
// NICs jobs use (named in doctor.conf or the job's environment) are compared.
TEST(Doctor, MtuComparedWithinTheJobFabricOnly) {
  NodeFacts f;
  for (auto [name, mtu] : {std::pair{"eth0", 1500u}, std::pair{"eth1", 9000u}, std::pair{"eth2", 1500u}}) {
    cnet::topology::Nic n;
    n.name = n.netdev = name;
    n.mtu = mtu;
    n.state = "up";
    f.topology.nics.push_back(n);
  }
  auto config = DoctorConfig::parse("nofile = 0\nmemlock = off\n", "t");
  auto r = run_checks(f, config);
  EXPECT_EQ(find(r, "nics")->status, Status::pass);
  EXPECT_NE(find(r, "nics")->seen.find("MTUs not compared"), std::string::npos) << find(r, "nics")->seen;
  auto fabric = DoctorConfig::parse("mtu.nics = eth1,eth2\n", "t");
  EXPECT_EQ(find(run_checks(f, fabric), "mtu eth")->status, Status::fail);
  EXPECT_NE(find(run_checks(f, fabric), "mtu eth")->seen.find("eth1=9000, eth2=1500"), std::string::npos);
  f.job_fabric = cnet::topology::NicSelection::from_ucx("eth0,eth2");  // UCX_NET_DEVICES / NCCL_SOCKET_IFNAME of the job: they agree
  EXPECT_EQ(find(run_checks(f, config), "mtu eth"), nullptr);
  auto excluded = DoctorConfig::parse("mtu.nics = eth1,eth2\nnics.exclude = eth\n", "t");
  EXPECT_EQ(find(run_checks(f, excluded), "mtu eth"), nullptr);
}

// A sysfs read that never returns (here a FIFO where hwloc reads the CPU list) is a verdict about this
// node within the deadline, not a health check that never ends.
TEST(Doctor, HungDiscoveryIsANodeFaultWithinItsDeadline) {
  TempDir d;
  d.write("sys/class/net/eth0/mtu", "1500\n");
  std::filesystem::create_directories(d.path() / "sys/devices/system/cpu");
  ASSERT_EQ(mkfifo(d.file("sys/devices/system/cpu/online").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo(d.file("sys/devices/system/cpu/possible").c_str(), 0600), 0);
  GatherOptions o;
  o.root = d.path().string();
  o.slurm_conf = d.file("slurm.conf");
  o.live_process_limits = false;
  o.deadlines.discovery = std::chrono::seconds(1);
  auto t0 = std::chrono::steady_clock::now();
  NodeFacts f = gather_facts(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(f.topology_hung);
  auto r = run_checks(f, DoctorConfig::defaults());
  ASSERT_NE(find(r, "discovery"), nullptr);
  EXPECT_EQ(find(r, "discovery")->status, Status::fail);
  EXPECT_NE(find(r, "discovery")->seen.find("did not finish within 1 s"), std::string::npos);
}

// A recorded tree with one NIC (eth0, a device behind it), read with the given ethtool answers.
GatherOptions one_nic_tree(TempDir& d, cnet::topology::EthtoolReader ethtool) {
  d.write("sys/class/net/eth0/mtu", "1500\n");
  d.write("sys/class/net/eth0/device/vendor", "0x15b3\n");
  GatherOptions o;
  o.root = d.path().string();
  o.slurm_conf = d.file("slurm.conf");
  o.live_process_limits = false;
  o.ethtool = std::move(ethtool);
  return o;
}

// An ethtool ioctl that never returns (a NIC driver stuck) is a verdict within its own deadline too.
TEST(Doctor, HungNicDriverIsANodeFaultWithinItsDeadline) {
  TempDir d;
  GatherOptions o = one_nic_tree(d,  [](const std::string&) -> std::optional<cnet::topology::EthtoolAnswers> {
    pause();
    return std::nullopt;
  });
  o.deadlines.nics = std::chrono::seconds(1);
  auto t0 = std::chrono::steady_clock::now();
  NodeFacts f = gather_facts(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  auto r = run_checks(f, DoctorConfig::defaults());
  ASSERT_NE(find(r, "discovery"), nullptr);
  EXPECT_EQ(find(r, "discovery")->status, Status::fail);
  EXPECT_NE(find(r, "discovery")->seen.find("were not read within 1 s (a hung NIC driver)"), std::string::npos);
}

// The settings read in the child arrive whole in the parent.
TEST(Doctor, NicSettingsComeBackFromTheChild) {
  TempDir d;
  GatherOptions o = one_nic_tree(d, [](const std::string&) {
    cnet::topology::EthtoolAnswers a;
    a.driver = "mlx5_core", a.firmware = "16.35.2000";
    return std::optional(a);
  });
  NodeFacts f = gather_facts(o);
  EXPECT_EQ(f.nic_settings_problem, "");
  ASSERT_EQ(f.nic_settings.size(), 1u);
  EXPECT_EQ(f.nic_settings[0].firmware, "16.35.2000");
  EXPECT_EQ(f.nic_drivers, "eth0 mlx5_core firmware 16.35.2000");
}

TEST(Doctor, NodeStateFromScontrol) {
  auto s = node_state("NodeName=cn1 Arch=x86_64 CoresPerSocket=4 State=IDLE+DRAIN ThreadsPerCore=1 Reason=cnet-doctor: firewall: x [root@2026-12-03T10:00:00]\n");
  EXPECT_TRUE(s.known);
  EXPECT_TRUE(s.drained);
  EXPECT_EQ(s.reason, "cnet-doctor: firewall: x");
  s = node_state("NodeName=cn1 State=IDLE Reason=DRAIN the sink? [root@2026-12-03T10:00:00]");
  EXPECT_FALSE(s.drained) << "DRAIN in the reason text is not the node's state";
  EXPECT_TRUE(s.known);
  EXPECT_FALSE(node_state("slurm_load_node error: Invalid node name specified").known);
}

TEST(Doctor, FirewallAsTheKernelWouldApplyIt) {
  NodeFacts f;
  f.controller = "ctl";
  f.controller_address = "10.0.0.1";
  f.firewall_known = true;
  f.firewall_rules = "*filter\n-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\n-A INPUT -p tcp -m multiport --dports 6000:6900 -j DROP\n";
  auto config = DoctorConfig::parse("clock = off\nnics = off\n", "t.conf");
  auto r = run_checks(f, config);
  ASSERT_NE(find(r, "firewall"), nullptr);
  EXPECT_EQ(find(r, "firewall")->status, Status::fail);
  EXPECT_NE(find(r, "firewall")->seen.find("blocks Slurm port 6818 for slurmctld (ctl at 10.0.0.1)"), std::string::npos) << find(r, "firewall")->seen;
  f.firewall_rules = "-A INPUT -p tcp --dport 22 -j DROP\n";
  EXPECT_EQ(find(run_checks(f, config), "firewall")->status, Status::pass);
  f.firewall_rules = "-A INPUT ! -s 10.0.0.1 -p tcp --dport 6818 -j DROP\n";  // exempts the controller
  EXPECT_EQ(find(run_checks(f, config), "firewall")->status, Status::pass);
  f.firewall_rules = "-A INPUT -p tcp -m multiport --dports : -j DROP\n";  // aborted with rc 134 before
  EXPECT_EQ(find(run_checks(f, config), "firewall")->status, Status::warn);
}

// As HealthCheckProgram a fail drains, and conditions usually alike on every node would drain them all:
// there they warn, saying so. A rule that blocks slurmd's port from every source is this node's own
// fault and still fails; one that blocks only the address slurm.conf names may be the site's policy
// (slurmctld can connect from another address).
TEST(Doctor, SiteWideConditionsWarnUnderTheHealthCheck) {
  NodeFacts f;
  f.controller = "ctl";
  f.controller_address = "10.0.0.1";
  f.firewall_known = true;
  f.firewall_rules = "*filter\n:INPUT DROP [0:0]\n-A INPUT -s 192.168.0.0/16 -j ACCEPT\nCOMMIT\n";
  f.memlock_bytes = 65536;
  cnet::topology::Nic storage, compute;
  storage.name = storage.rdma_device = "mlx5_0", storage.netdev = "ib0", storage.kind = cnet::topology::NicKind::ib, storage.mtu = 65520;
  compute.name = compute.rdma_device = "mlx5_1", compute.netdev = "ib1", compute.kind = cnet::topology::NicKind::ib, compute.mtu = 4092;
  f.topology.nics = {storage, compute};
  auto config = DoctorConfig::parse("clock = off\nswap = off\n", "t.conf");
  auto by_hand = run_checks(f, config);
  EXPECT_EQ(find(by_hand, "firewall")->status, Status::fail);
  EXPECT_EQ(find(by_hand, "memlock")->status, Status::fail);
  EXPECT_EQ(find(by_hand, "mtu ib")->status, Status::fail);
  config.health_check = true;
  auto health = run_checks(f, config);
  for (const char* check : {"firewall", "memlock", "mtu ib"}) {
    ASSERT_NE(find(health, check), nullptr) << check;
    EXPECT_EQ(find(health, check)->status, Status::warn) << check;
    EXPECT_NE(find(health, check)->seen.find("if every node reports this, it is a site setting"), std::string::npos) << find(health, check)->seen;
  }
  f.firewall_rules = "-A INPUT -p tcp --dport 6818 -j DROP\n";  // from anywhere: this node's own
  EXPECT_EQ(find(run_checks(f, config), "firewall")->status, Status::fail);
}

TEST(Doctor, ConfigIsCheckedLineByLine) {
  auto c = DoctorConfig::parse("# site\nswap = fail\nclock.max_offset_ms = 50\n", "site.conf");
  EXPECT_EQ(c.get("swap"), "fail");
  EXPECT_EQ(c.get("clock.max_offset_ms"), "50");
  EXPECT_EQ(c.get("dns"), "warn") << "defaults stay";
  for (auto [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {"swap = sometimes\n", "site.conf:1: swap must be fail, warn or off"},
           {"\nclock.max_offset_ms = soon\n", "site.conf:2: clock.max_offset_ms must be a whole number"},
           {"colour = blue\n", "site.conf:1: unknown key 'colour'"},
           {"deadline.dns = 0\n", "site.conf:1: deadline.dns must be 1 to 999 seconds"},
           {"dns.exclude = cn[3-1]\n", "site.conf:1: dns.exclude: host list"},
           {"just words\n", "site.conf:1: expected KEY = VALUE"}}) {
    try {
      DoctorConfig::parse(text, "site.conf");
      FAIL() << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
  auto off = DoctorConfig::parse("swap = off\nfs.file-max = 0\n", "x");
  NodeFacts f;
  f.swap_kb = 100;
  auto r = run_checks(f, off);
  EXPECT_EQ(find(r, "swap"), nullptr);
  EXPECT_EQ(find(r, "fs.file-max"), nullptr);
}

TEST(Doctor, HealthActions) {
  std::vector<CheckResult> bad = {{"swap", Status::warn, "1 MB", "x"}, {"gres gpu", Status::fail, "gres.conf lists /dev/nvidia1 but \"it\" does not exist", "y"}};
  std::vector<CheckResult> good = {{"swap", Status::warn, "1 MB", "x"}};
  auto a = health_action(bad, false, "");
  EXPECT_EQ(a.kind, HealthAction::drain);
  EXPECT_EQ(a.reason, "cnet-doctor: gres gpu: gres.conf lists /dev/nvidia1 but  it  does not exist");
  EXPECT_EQ(health_action(bad, true, a.reason).kind, HealthAction::nothing) << "already drained for this";
  EXPECT_EQ(health_action(bad, true, "admin: bad fan").kind, HealthAction::nothing) << "an admin's drain is left alone";
  EXPECT_EQ(health_action(good, true, a.reason).kind, HealthAction::resume);
  EXPECT_EQ(health_action(good, true, "admin: bad fan").kind, HealthAction::nothing);
  EXPECT_EQ(health_action(good, false, "").kind, HealthAction::nothing);
}

TEST(Doctor, SnapshotAndCompare) {
  FakeNode node;
  NodeFacts good = gather_facts(node.options());
  std::string snap = snapshot_json(good);
  EXPECT_TRUE(compare_snapshot(snap, good).empty());
  NodeFacts other = good;
  other.sysctl["net.core.rmem_max"] = "4194304";
  other.swap_kb = 0;
  auto diffs = compare_snapshot(snap, other);
  EXPECT_EQ(std::set<std::string>(diffs.begin(), diffs.end()),
            (std::set<std::string>{"sysctl/net.core.rmem_max: template \"212992\", here \"4194304\"", "swap_kb: template 2097148, here 0"}));
  EXPECT_THROW(compare_snapshot("{}", good), std::runtime_error);
  EXPECT_THROW(compare_snapshot("not json", good), std::runtime_error);
  EXPECT_THROW(compare_snapshot(R"({"format": 1})", good), std::runtime_error);  // not a JSON library error
}

TEST(Doctor, PrometheusVerdicts) {
  std::vector<CheckResult> r = {{"clock", Status::pass, "", ""}, {"swap", Status::warn, "", ""},
                                {"nic mlx5_0", Status::fail, "", ""}, {"firewall", Status::skip, "", ""}};
  std::string text = cnet::common::prometheus_text(results_metrics("cn1", r, 1700000000));
  EXPECT_NE(text.find("cnet_doctor_check_status{check=\"clock\",node=\"cn1\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cnet_doctor_check_status{check=\"swap\",node=\"cn1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("cnet_doctor_check_status{check=\"nic mlx5_0\",node=\"cn1\"} 2\n"), std::string::npos);
  EXPECT_EQ(text.find("check=\"firewall\""), std::string::npos) << "skipped checks are left out";
  EXPECT_NE(text.find("cnet_doctor_failed_checks{node=\"cn1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("cnet_doctor_last_run_timestamp_seconds{node=\"cn1\"} 1700000000\n"), std::string::npos);
}

// Slurm's authentication: AuthInfo's socket is where munged is asked, and a key others can read (or
// one munged's user does not own) is named with the fix. Live probes (munge -n | unmunge) are the
// cluster tests' (health_check_test.sh): a fake root only has files.
TEST(Doctor, MungeKeyAndSocket) {
  FakeNode node;
  node.dir.write("etc/slurm/slurm.conf", "ClusterName=c\nAuthType=auth/munge\nAuthInfo=cred_expire=10,socket=/run/site/munge.sock\n");
  node.dir.write("etc/munge/munge.key", std::string(1024, 'k'));
  // the key is the test's own file: its owner is the user running the test, named munge here
  node.dir.write("etc/passwd", "munge:x:" + std::to_string(getuid()) + ":110::/nonexistent:/usr/sbin/nologin\n");
  chmod((node.dir.path() / "etc/munge/munge.key").c_str(), 0644);
  NodeFacts f = gather_facts(node.options());
  EXPECT_TRUE(f.munge.used);
  EXPECT_EQ(f.munge.socket, "/run/site/munge.sock");
  EXPECT_FALSE(f.munge.probed) << "no live probe under a fake root";
  EXPECT_EQ(f.munge.key_owner, "munge");
  auto r = run_checks(f, DoctorConfig::defaults());
  ASSERT_TRUE(find(r, "munge key"));
  EXPECT_EQ(find(r, "munge key")->status, Status::fail);
  EXPECT_NE(find(r, "munge key")->seen.find("has mode 0644: users other than its owner can read it"), std::string::npos);
  EXPECT_NE(find(r, "munge key")->fix.find("chmod 0400 /etc/munge/munge.key"), std::string::npos);

  chmod((node.dir.path() / "etc/munge/munge.key").c_str(), 0400);
  r = run_checks(gather_facts(node.options()), DoctorConfig::defaults());
  EXPECT_FALSE(find(r, "munge key"));
  EXPECT_EQ(find(r, "munge")->status, Status::pass);

  node.dir.write("etc/passwd", "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n");
  f = gather_facts(node.options());
  r = run_checks(f, DoctorConfig::defaults());
  EXPECT_EQ(find(r, "munge key")->status, Status::warn) << "owned by " << f.munge.key_owner;

  // What a live probe found, as the checks judge it.
  f.munge.probed = true;
  f.munge.problem = "munge -n: cannot reach munged's socket (exit 6)";
  r = run_checks(f, DoctorConfig::defaults());
  EXPECT_EQ(find(r, "munge")->status, Status::fail);
  EXPECT_NE(find(r, "munge")->seen.find("cannot reach munged's socket (exit 6) (/run/site/munge.sock)"), std::string::npos);
  EXPECT_EQ(find(run_checks(f, DoctorConfig::parse("munge = warn\n", "t")), "munge")->status, Status::warn);

  node.dir.write("etc/slurm/slurm.conf", "ClusterName=c\nAuthType=auth/slurm\n");
  r = run_checks(gather_facts(node.options()), DoctorConfig::defaults());
  EXPECT_FALSE(find(r, "munge")) << "a cluster that authenticates otherwise";
  EXPECT_FALSE(find(r, "munge key"));
}

namespace {
// A node with one 100 Gb/s NIC on NUMA node 1 (CPUs 8-15), eight vectors, rings as given.
struct FakeNicNode : FakeNode {
  explicit FakeNicNode(const std::string& irq_cpus, unsigned ring = 8192, unsigned speed_mbps = 100000) {
    cnet::topology::testing::add_numa_node(dir, 0, "0-7");
    cnet::topology::testing::add_numa_node(dir, 1, "8-15");
    cnet::topology::testing::FakeNic nic;
    nic.netdev = "eth2", nic.numa_node = 1, nic.irq_cpus = irq_cpus, nic.speed_mbps = speed_mbps, nic.rdma_device = "mlx5_0",
    nic.firmware = "16.35.2000";
    cnet::topology::testing::add_nic(dir, nic);
    answers.driver = "mlx5_core", answers.driver_version = "5.8-1.0.1";
    answers.rings = cnet::topology::EthtoolAnswers::Rings{ring, 8192, ring, 8192};
    answers.offloads = {{"gro", true}, {"gso", true}, {"tso", true}, {"lro", false}};
  }
  GatherOptions options() const {
    GatherOptions o = FakeNode::options();
    o.ethtool = [a = answers](const std::string&) { return std::optional(a); };
    return o;
  }
  cnet::topology::EthtoolAnswers answers;
};
}  // namespace

TEST(Doctor, NicRingsFarBelowTheirMaximumWarnWithTheCommand) {
  FakeNicNode node("8-15", 1024);
  auto r = run_checks(gather_facts(node.options()), DoctorConfig::defaults());
  const CheckResult* rings = find(r, "nic eth2 rings");
  ASSERT_TRUE(rings);
  EXPECT_EQ(rings->status, Status::warn) << "slower, not broken: never drains";
  EXPECT_NE(rings->seen.find("RX ring 1024 of 8192"), std::string::npos) << rings->seen;
  EXPECT_EQ(rings->fix.substr(0, 34), "ethtool -G eth2 rx 8192 tx 8192 (a");
  EXPECT_EQ(find(run_checks(gather_facts(FakeNicNode("8-15", 4096).options()), DoctorConfig::defaults()), "nic eth2 rings")->status, Status::pass);
  EXPECT_EQ(find(r, "nic eth2 irqs")->status, Status::pass);
  EXPECT_NE(find(r, "nic eth2 irqs")->seen.find("8 only on its NUMA node 1"), std::string::npos) << find(r, "nic eth2 irqs")->seen;
}

TEST(Doctor, FastNicIrqsOnOneCpuOrTheFarSocketWarn) {
  auto irqs = [](const FakeNicNode& node, const DoctorConfig& c = DoctorConfig::defaults()) {
    auto r = run_checks(gather_facts(node.options()), c);
    const CheckResult* x = find(r, "nic eth2 irqs");
    return x ? *x : CheckResult{"none", Status::skip, "", ""};
  };
  CheckResult one = irqs(FakeNicNode("9"));
  EXPECT_EQ(one.status, Status::warn);
  EXPECT_EQ(one.seen, "all 8 IRQs on CPU 9 (one core takes every interrupt of a 100 Gb/s NIC)");
  EXPECT_NE(one.fix.find("echo 8-15 > /proc/irq/$irq/smp_affinity_list"), std::string::npos) << one.fix;
  CheckResult far = irqs(FakeNicNode("0-7"));
  EXPECT_EQ(far.status, Status::warn);
  EXPECT_EQ(far.seen, "8 of 8 IRQs only on CPUs outside its NUMA node 1 (CPUs 8-15)");
  EXPECT_EQ(irqs(FakeNicNode("0-15")).status, Status::pass) << "allowed on the whole machine includes its own node";
  EXPECT_EQ(irqs(FakeNicNode("9", 8192, 10000)).check, "none") << "a 10 Gb/s NIC: one CPU keeps up";
  auto strict = DoctorConfig::parse("nic.tuning = fail\nirqs.min_mbps = 0\n", "t");
  EXPECT_EQ(irqs(FakeNicNode("9"), strict).check, "none");
  EXPECT_EQ(find(run_checks(gather_facts(FakeNicNode("8-15", 64).options()), strict), "nic eth2 rings")->status, Status::fail);
  EXPECT_TRUE(irqs(FakeNicNode("9"), DoctorConfig::parse("nics.exclude = mlx5_0\n", "t")).check == "none") << "excluded by its RDMA name";
}

TEST(Doctor, DriverFirmwareAndOffloadsInSnapshotsAndCompare) {
  FakeNicNode node("8-15");
  NodeFacts good = gather_facts(node.options());
  auto snap = nlohmann::json::parse(snapshot_json(good));
  const auto& eth2 = snap["nic_settings"]["eth2"];
  EXPECT_EQ(eth2["driver"], "mlx5_core");
  EXPECT_EQ(eth2["driver_version"], "5.8-1.0.1");
  EXPECT_EQ(eth2["firmware"], "16.35.2000");
  EXPECT_EQ(eth2["rx_queues"], 8);
  EXPECT_EQ(eth2["rings"]["rx_max"], 8192);
  EXPECT_EQ(eth2["offloads"]["gro"], true);
  EXPECT_EQ(eth2["irqs"], 8);
  EXPECT_EQ(eth2["irqs_on_own_numa_node"], 8);

  FakeNicNode updated("8-15");
  updated.answers.driver_version = "23.10-0.5.5";
  updated.answers.offloads["gro"] = false;
  auto diffs = compare_snapshot(snapshot_json(good), gather_facts(updated.options()));
  EXPECT_EQ(std::set<std::string>(diffs.begin(), diffs.end()),
            (std::set<std::string>{"nic_settings/eth2/driver_version: template \"5.8-1.0.1\", here \"23.10-0.5.5\"",
                                   "nic_settings/eth2/offloads/gro: template true, here false"}));
}

// --job: a node whose NIC driver differs from the rest is named, and so is a pair whose hosts' drivers
// changed since the baseline was saved.
TEST(Doctor, JobTableNamesDriverDrift) {
  auto node = [](const std::string& host, const std::string& version) {
    FakeNicNode n("8-15");
    n.answers.driver_version = version;
    GatherOptions o = n.options();
    o.hostname = host;
    NodeFacts f = gather_facts(o);
    NodeReport r{host, "pass", {}, {}, "", cnet::topology::driver_summaries(f.nic_settings)};
    nlohmann::json flat = nlohmann::json::parse(snapshot_json(f)).flatten();
    for (auto& [k, v] : flat.items()) r.settings[k] = v.dump();
    return r;
  };
  std::vector<NodeReport> nodes = {node("cn1", "5.8-1.0.1"), node("cn2", "23.10-0.5.5"), node("cn3", "5.8-1.0.1")};
  cnet::transport::PerfReport link{"p2p", 2, "tcp", {"cn1", "cn3"}, {{1 << 20, 5.0, 5.0, 200, 190, 250}}};
  std::map<std::string, cnet::transport::PerfReport> pairs = {{"cn3", link}};
  add_nic_drivers(nodes, pairs);
  EXPECT_EQ(pairs["cn3"].nic_drivers.at("cn3"), "eth2 mlx5_core 5.8-1.0.1 firmware 16.35.2000");
  std::vector<cnet::transport::PerfReport> baseline = {pairs["cn3"]};

  auto rows = job_table(nodes, pairs, &baseline, 0.2);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].problems.empty()) << cnet::common::join(rows[0].problems, "; ");
  EXPECT_EQ(rows[1].problems, std::vector<std::string>{"nic_settings/eth2/driver_version \"23.10-0.5.5\" (most nodes: \"5.8-1.0.1\")"});
  EXPECT_TRUE(rows[2].problems.empty()) << cnet::common::join(rows[2].problems, "; ");

  // cn3's driver updated after the baseline (three versions now, no majority to name): as fast as ever
  // it is no problem; slower, the change is named beside the regression.
  nodes[2] = node("cn3", "24.01-0.3.3");
  add_nic_drivers(nodes, pairs);
  EXPECT_TRUE(job_table(nodes, pairs, &baseline, 0.2)[2].problems.empty());
  pairs["cn3"].rows[0].bandwidth_gbytes = 1.0;
  rows = job_table(nodes, pairs, &baseline, 0.2);
  ASSERT_EQ(rows[2].problems.size(), 2u) << cnet::common::join(rows[2].problems, "; ");
  EXPECT_EQ(rows[2].problems[0].substr(0, 34), "link to rank 0: 1 MiB: bandwidth 1");
  EXPECT_EQ(rows[2].problems[1], "NIC driver changed since the baseline: cn3: eth2 mlx5_core 5.8-1.0.1 firmware 16.35.2000 -> "
                                 "eth2 mlx5_core 24.01-0.3.3 firmware 16.35.2000");
}

// --job on the source article's minimal pool, two machines: one port without jumbo frames is no
// majority's odd one out, yet the job must hear of it, naming each node's MTU. With three nodes the
// majority names the odd node too; two against two blames neither node but still reports the job.
TEST(Doctor, JobWideMtuMismatchIsReportedWithoutAMajority) {
  auto node = [](const std::string& host, const std::string& mtu) {
    return NodeReport{host, "pass", {}, {{"/job_network/mtu", mtu}, {"/job_network/rate_gbps", "100"}}, "", ""};
  };
  std::vector<NodeReport> two = {node("cn1", "9000"), node("cn2", "1500")};
  EXPECT_EQ(job_wide_problems(two), std::vector<std::string>{"cn1 9000, cn2 1500: MTU differs across the job"});
  for (const auto& row : job_table(two, {}, nullptr, 0.2)) EXPECT_TRUE(row.problems.empty()) << row.host << " blamed without a majority";

  std::vector<NodeReport> three = {node("cn1", "9000"), node("cn2", "1500"), node("cn3", "9000")};
  EXPECT_EQ(job_wide_problems(three).size(), 1u);
  auto rows = job_table(three, {}, nullptr, 0.2);
  EXPECT_EQ(rows[1].problems, std::vector<std::string>{"job_network/mtu 1500 (most nodes: 9000)"});
  EXPECT_TRUE(rows[0].problems.empty());

  std::vector<NodeReport> four = {node("cn1", "9000"), node("cn2", "1500"), node("cn3", "9000"), node("cn4", "1500")};
  for (const auto& row : job_table(four, {}, nullptr, 0.2)) EXPECT_TRUE(row.problems.empty()) << row.host << " blamed in a tie";
  EXPECT_EQ(job_wide_problems(four).size(), 1u);

  std::vector<NodeReport> alike = {node("cn1", "9000"), node("cn2", "9000")};
  EXPECT_TRUE(job_wide_problems(alike).empty());
  alike[1].settings["/job_network/rate_gbps"] = "25";
  EXPECT_EQ(job_wide_problems(alike), std::vector<std::string>{"cn1 100, cn2 25: link rate (Gb/s) differs across the job"});
}

// A job stuck completing on this node fails (the health check drains, naming it); one running past its
// end only warns; other nodes' stuck jobs and recent ends are not this node's business.
TEST(Doctor, StuckJobsOnThisNode) {
  NodeFacts f;
  f.hostname = "cn2";
  f.now = 1796332000;
  f.held_jobs_known = true;
  f.held_jobs = {{"42", "alice", true, f.now - 900, {"cn1", "cn2"}},
                 {"43", "bob", false, f.now - 4000, {"cn2"}},
                 {"44", "carol", true, f.now - 900, {"cn3"}},
                 {"45", "dave", true, f.now - 20, {"cn2"}}};
  auto stuck_results = [](const std::vector<CheckResult>& r) {
    std::vector<CheckResult> out;
    for (const auto& x : r)
      if (x.check == "stuck job") out.push_back(x);
    return out;
  };
  auto r = stuck_results(run_checks(f, DoctorConfig::defaults()));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, Status::warn);
  EXPECT_EQ(r[0].seen, "job 43 (bob) running 1 h 6 min past its end");
  EXPECT_EQ(r[1].status, Status::fail);
  EXPECT_EQ(r[1].seen, "job 42 (alice) completing for 15 min");
  auto action = health_action(run_checks(f, DoctorConfig::parse("clock = off\nswap = off\nlimits = off\nmemlock = off\n", "t")), false, "");
  EXPECT_EQ(action.kind, HealthAction::drain);
  EXPECT_NE(action.reason.find("job 42 (alice) completing for 15 min"), std::string::npos) << action.reason;

  r = stuck_results(run_checks(f, DoctorConfig::parse("stuck.after_s = 3600\n", "t")));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].seen, "job 43 (bob) running 1 h 6 min past its end");
  f.held_jobs.resize(1);
  f.hostname = "cn4";
  r = stuck_results(run_checks(f, DoctorConfig::defaults()));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, Status::pass);
  f.held_jobs_known = false;  // no Slurm to ask: nothing said
  EXPECT_TRUE(stuck_results(run_checks(f, DoctorConfig::defaults())).empty());
}
