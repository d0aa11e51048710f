#include "cnet/doctor/job_mode.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"
#include "cnet/topology/nic_settings.hpp"
#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/link_matrix.hpp"
#include "cnet/transport/link_test.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::doctor {
namespace {

using json = nlohmann::json;

const transport::PerfReport* baseline_for(const std::vector<transport::PerfReport>& baseline, const transport::PerfReport& now) {
  for (const auto& b : baseline)
    if (b.mode == now.mode && b.hosts == now.hosts) return &b;
  return nullptr;
}

}  // namespace

std::string to_json(const NodeReport& r) {
  return json{{"host", r.host},         {"status", r.status},           {"failing", r.failing},
              {"settings", r.settings}, {"munge", r.munge_credential}, {"nic_drivers", r.nic_drivers}}
      .dump();
}

NodeReport node_report_from_json(const std::string& text) {
  try {
    json j = json::parse(text);
    return {j.at("host"), j.at("status"), j.at("failing").get<std::vector<std::string>>(),
            j.at("settings").get<std::map<std::string, std::string>>(), j.value("munge", ""), j.value("nic_drivers", "")};
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a node sent a damaged report: ") + e.what());
  }
}

void add_nic_drivers(const std::vector<NodeReport>& nodes, std::map<std::string, transport::PerfReport>& pairs) {
  for (auto& [host, report] : pairs)
    for (const auto& n : nodes)
      if (std::find(report.hosts.begin(), report.hosts.end(), n.host) != report.hosts.end() && !n.nic_drivers.empty())
        report.nic_drivers[n.host] = n.nic_drivers;
}

namespace {

// Per setting, how many nodes have each value.
using Votes = std::map<std::string, std::map<std::string, int>>;
Votes count_votes(const std::vector<NodeReport>& nodes) {
  Votes votes;
  for (const auto& n : nodes)
    for (const auto& [k, v] : n.settings) ++votes[k][v];
  return votes;
}

// The value more than half the nodes that report a setting have, if any: only then is a node with
// another value the odd one out (two nodes, or two against two, blame nobody).
const std::string* majority(const std::map<std::string, int>& counts) {
  int total = 0;
  for (const auto& [value, n] : counts) total += n;
  for (const auto& [value, n] : counts)
    if (2 * n > total) return &value;
  return nullptr;
}

// Settings every node of a job must share, however many differ: traffic between two nodes of different
// MTUs stalls or fragments, and a slower link holds the whole job back.
const std::map<std::string, std::string> kMustAgree = {{"/job_network/mtu", "MTU"}, {"/job_network/rate_gbps", "link rate (Gb/s)"}};

}  // namespace

std::vector<std::string> job_wide_problems(const std::vector<NodeReport>& nodes) {
  std::vector<std::string> out;
  for (const auto& [key, what] : kMustAgree) {
    std::vector<std::string> seen;
    std::set<std::string> values;
    for (const auto& n : nodes)
      if (auto it = n.settings.find(key); it != n.settings.end()) {
        seen.push_back(n.host + " " + it->second);
        values.insert(it->second);
      }
    if (values.size() > 1) out.push_back(common::join(seen, ", ") + ": " + what + " differs across the job");
  }
  return out;
}

std::vector<JobRow> job_table(const std::vector<NodeReport>& nodes, const std::map<std::string, transport::PerfReport>& pairs,
                              const std::vector<transport::PerfReport>* baseline, double tolerance) {
  const Votes votes = count_votes(nodes);
  std::vector<JobRow> rows;
  for (const auto& n : nodes) {
    JobRow row{n.host, n.status, true, 0, 0, n.failing};
    for (const auto& [k, v] : n.settings) {
      if (k == "/taken_on") continue;
      const std::string* most = majority(votes.at(k));
      if (most && *most != v) row.problems.push_back(k.substr(1) + " " + v + " (most nodes: " + *most + ")");
    }
    if (auto it = pairs.find(n.host); it != pairs.end() && !it->second.rows.empty()) {
      const auto& report = it->second;
      row.rank0 = false;
      row.gbytes = report.rows.back().bandwidth_gbytes;
      row.p99_us = report.rows.front().latency_p99_us;
      if (baseline)
        if (const auto* was = baseline_for(*baseline, report)) {
          auto regressed = transport::regressions(*was, report, tolerance);
          for (const auto& r : regressed) row.problems.push_back("link to rank 0: " + r);
          // A new driver with the link as fast as before is no problem; a slower link after one is the first lead.
          if (!regressed.empty())
            for (const auto& d : transport::driver_changes(*was, report)) row.problems.push_back("NIC driver changed since the baseline: " + d);
        }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

int run_job_mode(const DoctorConfig& config, const GatherOptions& gather, const JobModeOptions& o) {
  auto boot = transport::PmixBootstrap::connect();
  const auto& me = boot->placement();
  std::vector<transport::PerfReport> baseline;
  if (!o.compare_baseline.empty() && me.rank == 0)  // read before anyone measures: a bad file stops nothing half-way
    baseline = transport::baseline_from_json(common::read_file(o.compare_baseline, 16u << 20));
  GatherOptions g = gather;
  if (g.hostname.empty()) g.hostname = me.hostname;
  std::string mine, munge_socket;
  if (me.local_rank == 0) {  // one report per node
    auto facts = gather_facts(g);
    auto results = run_checks(facts, config);
    NodeReport report{facts.hostname, to_string(worst(results)), {}, {}, facts.munge.credential, facts.nic_drivers};
    munge_socket = facts.munge.socket;
    for (const auto& r : results)
      if (r.status == Status::fail) report.failing.push_back(r.check + ": " + r.seen);
    json flat = json::parse(snapshot_json(facts)).flatten();
    for (auto& [k, v] : flat.items()) report.settings[k] = v.dump();
    mine = to_json(report);
  }
  auto texts = boot->allgather_text("cnet.doctor.report", mine);

  // Pair tests, one at a time: rank 0 against the first rank of every other node, or every pair.
  transport::UcxChannel ch(*boot);
  std::map<std::string, transport::PerfReport> pairs;
  auto quick = transport::LinkTestOptions::quick();
  transport::LinkMatrix matrix;
  if (o.all_pairs) {
    std::vector<std::uint32_t> leaders;
    for (std::uint32_t r = 0; r < texts.size(); ++r)
      if (!texts[r].empty()) leaders.push_back(r);
    matrix = transport::measure_link_matrix(ch, *boot, leaders, quick);
    for (const auto& report : matrix.reports)  // the table's column: each node against rank 0
      if (report.hosts.size() == 2 && report.hosts[0] == me.hostname) pairs[report.hosts[1]] = report;
  } else {
    for (std::uint32_t r = 1; r < texts.size(); ++r) {
      if (texts[r].empty()) continue;
      auto report = transport::link_test(ch, 0, r, quick);
      if (me.rank == 0) pairs[ch.hostname_of(r)] = report;
    }
  }
  // Every rank stays until all pair tests are over: a fence, which rank 0 cannot leave before the others
  // have reached it (a message rank 0 sent and then exited could find its receiver told "rank 0 is gone").
  boot->allgather_text("cnet.doctor.done", "");
  if (me.rank != 0) return 0;

  std::vector<NodeReport> nodes;
  for (const auto& t : texts)
    if (!t.empty()) nodes.push_back(node_report_from_json(t));
  add_nic_drivers(nodes, pairs);
  auto rows = job_table(nodes, pairs, o.compare_baseline.empty() ? nullptr : &baseline, o.tolerance);
  // slurmctld decodes what every node's munged makes: here, rank 0's node stands in for it.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].munge_credential.empty() || nodes[i].host == me.hostname) continue;
    std::string problem = unmunge_problem(nodes[i].munge_credential, munge_socket, config.deadline("munge"));
    if (!problem.empty())
      rows[i].problems.push_back("munge: a credential made here does not decode on " + me.hostname + " (" + problem +
                                 "): every node needs the same /etc/munge/munge.key");
  }
  auto across = job_wide_problems(nodes);
  transport::MatrixFindings findings;
  if (o.all_pairs) {
    if (!baseline.empty()) transport::compare_with_baseline(matrix, baseline);
    findings = transport::find_slow_pairs(matrix, o.tolerance);
    across.insert(across.end(), findings.lines.begin(), findings.lines.end());
    if (!o.heatmap.empty())
      common::write_file_atomically(o.heatmap, transport::heatmap_svg(matrix, findings, "cnet-doctor --job: " + std::to_string(matrix.hosts.size()) +
                                                                                     " nodes, every pair (" + common::join(matrix.hosts, ", ") + ")"));
  }
  int bad = static_cast<int>(across.size());
  json out = json::array();
  if (!o.json) std::printf("%-14s %-5s %10s %10s  %s\n", "node", "check", "GB/s", "p99(us)", "problems");
  for (const auto& row : rows) {
    bad += !row.problems.empty();
    std::string problems = common::join(row.problems, "; ");
    if (o.json)
      out.push_back({{"host", row.host}, {"status", row.status}, {"gbytes", row.gbytes}, {"p99_us", row.p99_us}, {"problems", row.problems}});
    else if (row.rank0)
      std::printf("%-14s %-5s %10s %10s  %s\n", row.host.c_str(), row.status.c_str(), "(rank 0)", "", problems.c_str());
    else
      std::printf("%-14s %-5s %10.2f %10.1f  %s\n", row.host.c_str(), row.status.c_str(), row.gbytes, row.p99_us, problems.c_str());
  }
  if (o.json) {
    json report{{"nodes", out}, {"job", across}};
    if (o.all_pairs) report["matrix"] = json::parse(transport::to_json(matrix, findings));
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    for (const auto& line : across) std::printf("job: %s\n", line.c_str());
  }
  std::fflush(stdout);
  if (!o.save_baseline.empty()) {
    std::vector<transport::PerfReport> saved = matrix.reports;
    if (!o.all_pairs)
      for (const auto& [host, report] : pairs) saved.push_back(report);
    common::write_file_atomically(o.save_baseline, transport::baseline_json(saved));
  }
  return bad ? 1 : 0;
}

}  // namespace cnet::doctor
