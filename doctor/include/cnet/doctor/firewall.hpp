#pragma once
// The firewall as the kernel would apply it: iptables-save's filter table walked for one new TCP
// connection (from the controller to slurmd's port, say), chain by chain, following jumps, RETURN,
// negations, sources, interfaces, connection states and the chain policy. A rule this reader cannot
// evaluate for sure (an unknown match, a destination it does not know) makes the answer "unknown"
// when it would decide, never a guess: a health check must not drain a node on a rule that exempts it.

#include <string>

namespace cnet::doctor {

struct Connection {
  std::string source;     // IPv4 address of the peer, "" unknown
  unsigned port = 0;      // TCP destination port on this node
  std::string interface;  // where it arrives, "" unknown
};

struct FirewallVerdict {
  enum Kind { accepted, blocked, unknown } kind = accepted;
  std::string rule;  // the rule (or "policy DROP of INPUT") that decided, as iptables-save wrote it
  std::string why;   // for unknown: what could not be evaluated
};

FirewallVerdict evaluate_firewall(const std::string& iptables_save, const Connection& connection);

// The interface the kernel would use for `address` (IPv4), from /proc/net/route text: longest prefix,
// then lowest metric; "lo" for 127.0.0.0/8; "" when no route matches.
std::string interface_for(const std::string& proc_net_route, const std::string& address);

}  // namespace cnet::doctor
