#include <gtest/gtest.h>

#include "cnet/doctor/firewall.hpp"

using namespace cnet::doctor;

namespace {
// slurmctld at 10.0.0.1 connecting to slurmd's port 6818, arriving on eth0.
const Connection kFromController{"10.0.0.1", 6818, "eth0"};
FirewallVerdict::Kind verdict(const std::string& rules, Connection c = kFromController) { return evaluate_firewall(rules, c).kind; }
std::string table(const std::string& rules, const std::string& policy = "ACCEPT") {
  return "*filter\n:INPUT " + policy + " [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" + rules + "COMMIT\n";
}
}  // namespace

TEST(Firewall, ARuleDroppingTheSlurmdPortBlocks) {
  auto v = evaluate_firewall(table("-A INPUT -p tcp -m tcp --dport 6818 -j DROP\n"), kFromController);
  EXPECT_EQ(v.kind, FirewallVerdict::blocked);
  EXPECT_EQ(v.rule, "-A INPUT -p tcp -m tcp --dport 6818 -j DROP");
  EXPECT_EQ(verdict(table("-A INPUT -p tcp -m multiport --dports 6000:6900,22 -j REJECT --reject-with icmp-port-unreachable\n")),
            FirewallVerdict::blocked);
}

// The cases that drained healthy nodes: a rule that exempts the controller, another chain, another
// source, another interface, another protocol, an ACCEPT that comes first.
TEST(Firewall, RulesThatDoNotApplyToTheControllersConnectionDoNotBlock) {
  EXPECT_EQ(verdict(table("-A INPUT ! -s 10.0.0.0/24 -p tcp --dport 6818 -j DROP\n")), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(table("-A FORWARD -p tcp --dport 6818 -j DROP\n-A OUTPUT -p tcp --dport 6818 -j DROP\n")), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(table("-A INPUT -s 192.168.0.0/16 -p tcp --dport 6818 -j DROP\n")), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(table("-A INPUT -i eth9 -p tcp --dport 6818 -j DROP\n")), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(table("-A INPUT -i eth+ -p tcp --dport 6818 -j DROP\n")), FirewallVerdict::blocked);
  EXPECT_EQ(verdict(table("-A INPUT -p udp --dport 6818 -j DROP\n")), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(table("-A INPUT -s 10.0.0.1/32 -j ACCEPT\n-A INPUT -p tcp --dport 6818 -j DROP\n")), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(table("-A INPUT -p tcp --dport 22 -j DROP\n")), FirewallVerdict::accepted);
}

TEST(Firewall, PoliciesChainsAndConnectionState) {
  EXPECT_EQ(verdict(table("", "DROP")), FirewallVerdict::blocked);
  EXPECT_EQ(evaluate_firewall(table("", "DROP"), kFromController).rule, "policy DROP of INPUT");
  EXPECT_EQ(verdict(table("-A INPUT -m state --state RELATED,ESTABLISHED -j ACCEPT\n", "DROP")), FirewallVerdict::blocked)
      << "a new connection is not ESTABLISHED";
  EXPECT_EQ(verdict(table("-A INPUT -m conntrack --ctstate NEW -p tcp --dport 6818 -j ACCEPT\n", "DROP")), FirewallVerdict::accepted);
  // A site chain: the controller's address returns early, everyone else is dropped.
  std::string chained = "*filter\n:INPUT ACCEPT [0:0]\n:slurm - [0:0]\n-A INPUT -p tcp --dport 6817:6818 -j slurm\n"
                        "-A slurm -s 10.0.0.1 -j RETURN\n-A slurm -j DROP\nCOMMIT\n";
  EXPECT_EQ(verdict(chained), FirewallVerdict::accepted);
  EXPECT_EQ(verdict(chained, {"10.9.9.9", 6818, "eth0"}), FirewallVerdict::blocked);
  EXPECT_EQ(verdict(table("-A INPUT -p tcp --dport 6818 -j LOG --log-prefix \"slurm \"\n")), FirewallVerdict::accepted)
      << "LOG does not end the walk";
}

// What cannot be evaluated is reported as unknown (a warning), never as a block.
TEST(Firewall, WhatCannotBeEvaluatedIsUnknown) {
  auto v = evaluate_firewall(table("-A INPUT -p tcp -m recent --update --seconds 60 -j DROP\n"), kFromController);
  EXPECT_EQ(v.kind, FirewallVerdict::unknown);
  EXPECT_NE(v.why.find("recent"), std::string::npos) << v.why;
  EXPECT_EQ(verdict(table("-A INPUT -p tcp -m multiport --dports : -j DROP\n")), FirewallVerdict::unknown)
      << "a malformed port list (it once aborted cnet-doctor)";
  EXPECT_EQ(verdict(table("-A INPUT -i eth0 -p tcp --dport 6818 -j DROP\n"), {"10.0.0.1", 6818, ""}), FirewallVerdict::unknown);
  EXPECT_EQ(verdict(table("-A INPUT -s 10.0.0.0/8 -p tcp --dport 6818 -j DROP\n"), {"", 6818, "eth0"}), FirewallVerdict::unknown);
  EXPECT_EQ(verdict("garbage\n-A\n:\n*filter\n-A INPUT -j\n"), FirewallVerdict::accepted);
}

TEST(Firewall, RouteLookup) {
  std::string route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
      "ib0\t0000000A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
      "eth1\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
  EXPECT_EQ(interface_for(route, "10.0.3.4"), "ib0");
  EXPECT_EQ(interface_for(route, "192.168.0.7"), "eth1");
  EXPECT_EQ(interface_for(route, "8.8.8.8"), "eth0") << "the default route";
  EXPECT_EQ(interface_for(route, "127.0.0.1"), "lo");
  EXPECT_EQ(interface_for(route, "not-an-ip"), "");
}
