#include "cnet/doctor/firewall.hpp"

#include <arpa/inet.h>

#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "cnet/common/text.hpp"

namespace cnet::doctor {
namespace {

enum class Match { no, yes, maybe };

Match both(Match a, Match b) {
  if (a == Match::no || b == Match::no) return Match::no;
  return a == Match::maybe || b == Match::maybe ? Match::maybe : Match::yes;
}
Match negated(Match m, bool invert) {
  if (!invert || m == Match::maybe) return m;
  return m == Match::yes ? Match::no : Match::yes;
}

std::optional<std::uint32_t> ipv4(const std::string& text) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

// "10.0.0.0/8", "10.1.2.3", "10.1.2.3/255.255.0.0"
Match in_networks(const std::string& list, const std::string& source) {
  auto src = ipv4(source);
  if (!src) return Match::maybe;
  for (const auto& net : common::split(list)) {
    auto slash = net.find('/');
    auto base = ipv4(net.substr(0, slash));
    if (!base) return Match::maybe;  // a host name or IPv6: not evaluated
    std::uint32_t mask = 0xffffffffu;
    if (slash != std::string::npos) {
      std::string m = net.substr(slash + 1);
      if (auto dotted = ipv4(m)) mask = *dotted;
      else if (auto bits = common::parse_unsigned(m, 2); bits && *bits <= 32) mask = *bits == 0 ? 0 : 0xffffffffu << (32 - *bits);
      else return Match::maybe;
    }
    if ((*src & mask) == (*base & mask)) return Match::yes;
  }
  return Match::no;
}

Match port_in(const std::string& list, unsigned port) {
  auto ports = common::parse_ranges(list, 65536, ':');
  if (!ports) return Match::maybe;
  for (unsigned p : *ports)
    if (p == port) return Match::yes;
  return Match::no;
}

Match interface_is(const std::string& pattern, const std::string& iface) {
  if (iface.empty()) return Match::maybe;
  if (pattern.ends_with('+')) return iface.starts_with(pattern.substr(0, pattern.size() - 1)) ? Match::yes : Match::no;
  return pattern == iface ? Match::yes : Match::no;
}

// Shell-like words of one iptables-save rule ("--comment" values may be quoted).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (any || !cur.empty()) out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += c;
    }
  }
  if (any || !cur.empty()) out.push_back(cur);
  return out;
}

struct Rule {
  std::string text;
  std::vector<std::string> args;  // after "-A CHAIN"
};

struct Table {
  std::map<std::string, std::string> policies;  // built-in chains
  std::map<std::string, std::vector<Rule>> chains;
};

Table filter_table(const std::string& text) {
  Table t;
  std::istringstream in(text);
  std::string line, table = "filter";  // rules before any "*table" line count as filter
  while (std::getline(in, line)) {
    line = common::trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '*') {
      table = line.substr(1);
      continue;
    }
    if (table != "filter" || line == "COMMIT") continue;
    auto w = words(line);
    if (line[0] == ':' && !w.empty()) {
      t.chains[w[0].substr(1)];
      if (w.size() > 1 && w[1] != "-") t.policies[w[0].substr(1)] = w[1];
    } else if (w.size() >= 2 && (w[0] == "-A" || w[0] == "--append")) {
      t.chains[w[1]].push_back({line, {w.begin() + 2, w.end()}});
    }
  }
  return t;
}

struct Decision {
  enum { none, accept, drop, go, back, unknown } kind = none;
  std::string target;
};

// Whether one rule's matches hold for the connection, and what it then does.
std::pair<Match, Decision> judge(const Rule& rule, const Connection& c, std::string& why) {
  Match m = Match::yes;
  Decision d;
  bool invert = false;
  const auto& a = rule.args;
  auto unsure = [&](const std::string& reason) {  // the first reason a rule cannot be evaluated is the one told
    if (why.empty()) why = reason;
    return Match::maybe;
  };
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& w = a[i];
    auto value = [&]() -> std::string { return i + 1 < a.size() ? a[++i] : ""; };
    if (w == "!") {
      invert = true;
      continue;
    }
    Match here = Match::yes;
    bool was_match = true;
    if (w == "-p" || w == "--protocol") {
      std::string p = common::to_lower(value());
      here = p == "tcp" || p == "6" || p == "all" || p == "0" ? Match::yes : Match::no;
    } else if (w == "-s" || w == "--source" || w == "--src") {
      here = in_networks(value(), c.source);
      if (here == Match::maybe) unsure(c.source.empty() ? "the source of the connection is not known" : "a source that is not an IPv4 network");
    } else if (w == "-d" || w == "--destination" || w == "--dst") {
      value();
      here = unsure("a destination address match (-d) is not evaluated");
    } else if (w == "-i" || w == "--in-interface") {
      here = interface_is(value(), c.interface);
      if (here == Match::maybe) unsure("the interface the connection arrives on is not known");
    } else if (w == "-o" || w == "--out-interface") {
      value();
      here = Match::no;  // never set for traffic to this host
    } else if (w == "--dport" || w == "--destination-port" || w == "--dports" || w == "--destination-ports") {
      here = port_in(value(), c.port);
      if (here == Match::maybe) unsure("port list '" + common::printable(a[i], 32) + "' cannot be read");
    } else if (w == "--sport" || w == "--source-port" || w == "--sports" || w == "--source-ports" || w == "--tcp-flags") {
      value();
      if (w == "--tcp-flags") value();
      here = unsure("a source port or TCP flags match is not evaluated");
    } else if (w == "--syn") {
      here = Match::yes;  // a new connection's first packet
    } else if (w == "--state" || w == "--ctstate") {
      auto states = common::split(value());
      here = Match::no;
      for (const auto& s : states)
        if (s == "NEW") here = Match::yes;
    } else if (w == "-m" || w == "--match") {
      std::string module = value();
      static const char* const known[] = {"tcp", "udp", "multiport", "state", "conntrack", "comment"};
      bool ok = false;
      for (const char* k : known) ok = ok || module == k;
      if (!ok) here = unsure("match module '" + common::printable(module, 32) + "' is not evaluated");
    } else if (w == "--comment") {
      value();
    } else if (w == "-j" || w == "--jump" || w == "-g" || w == "--goto") {
      was_match = false;
      std::string target = value();
      if (target == "ACCEPT") d.kind = Decision::accept;
      else if (target == "DROP" || target == "REJECT") d.kind = Decision::drop;
      else if (target == "RETURN") d.kind = Decision::back;
      else d = {Decision::go, target};
      if (w == "-g" || w == "--goto") d.target = "goto:" + target;
    } else if (w.starts_with("--reject-with") || w == "--log-prefix" || w == "--log-level") {
      was_match = false;
      value();
    } else if (w.starts_with("-")) {
      // An option this reader does not know: whether it matches cannot be told.
      here = unsure("option '" + common::printable(w, 32) + "' is not evaluated");
    } else {
      was_match = false;
    }
    if (was_match) m = both(m, negated(here, invert));
    invert = false;
  }
  return {m, d};
}

FirewallVerdict walk(const Table& t, const std::string& chain, const Connection& c, int depth, bool& returned) {
  returned = false;
  if (depth > 32) return {FirewallVerdict::unknown, chain, "chains jump deeper than 32"};
  auto it = t.chains.find(chain);
  if (it == t.chains.end()) return {FirewallVerdict::unknown, chain, "jump to a chain that is not in the table"};
  for (const auto& rule : it->second) {
    std::string why;
    auto [match, d] = judge(rule, c, why);
    if (match == Match::no || d.kind == Decision::none) continue;
    bool goto_ = d.target.starts_with("goto:");
    std::string target = goto_ ? d.target.substr(5) : d.target;
    if (d.kind == Decision::go && !t.chains.count(target)) continue;  // LOG, MARK, ...: not terminal
    if (d.kind == Decision::go) {
      bool back = false;
      FirewallVerdict v = walk(t, target, c, depth + 1, back);
      if (back && goto_ && match == Match::yes) {
        returned = true;
        return {};
      }
      if (back) continue;
      if (match == Match::maybe && v.kind != FirewallVerdict::unknown) return {FirewallVerdict::unknown, rule.text, why};
      return v;
    }
    if (match == Match::maybe) return {FirewallVerdict::unknown, rule.text, why};
    if (d.kind == Decision::accept) return {FirewallVerdict::accepted, rule.text, ""};
    if (d.kind == Decision::drop) return {FirewallVerdict::blocked, rule.text, ""};
    returned = true;  // RETURN
    return {};
  }
  returned = true;  // fell off the end: back to the caller, or the policy for a built-in chain
  return {};
}

}  // namespace

FirewallVerdict evaluate_firewall(const std::string& text, const Connection& c) {
  Table t = filter_table(text);
  if (!t.chains.count("INPUT")) return {FirewallVerdict::accepted, "", ""};
  bool back = false;
  FirewallVerdict v = walk(t, "INPUT", c, 0, back);
  if (!back) return v;
  std::string policy = t.policies.count("INPUT") ? t.policies["INPUT"] : "ACCEPT";
  if (policy == "DROP" || policy == "REJECT") return {FirewallVerdict::blocked, "policy " + policy + " of INPUT", ""};
  return {FirewallVerdict::accepted, "policy " + policy + " of INPUT", ""};
}

std::string interface_for(const std::string& route, const std::string& address) {
  auto a = ipv4(address);
  if (!a) return "";
  if ((*a >> 24) == 127) return "lo";
  std::istringstream in(route);
  std::string line, best;
  int best_len = -1;
  unsigned long best_metric = 0;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(w >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    // /proc/net/route prints addresses as little-endian hex words.
    std::uint32_t d = ntohl(static_cast<std::uint32_t>(std::strtoul(dest.c_str(), nullptr, 16)));
    std::uint32_t m = ntohl(static_cast<std::uint32_t>(std::strtoul(mask.c_str(), nullptr, 16)));
    if ((*a & m) != d) continue;
    int len = __builtin_popcount(m);
    unsigned long met = std::strtoul(metric.c_str(), nullptr, 10);
    if (len > best_len || (len == best_len && met < best_metric)) best = iface, best_len = len, best_metric = met;
  }
  return best;
}

}  // namespace cnet::doctor
