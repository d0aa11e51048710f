#include "doctor_job.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/perf_report.hpp"
#include "cnet/transport/ucx_channel.hpp"

using namespace cnet;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct PairResult {
  double gbytes = 0, p99_us = 0;
};

// Rank 0 against `peer`: 8-byte ping-pong for latency, then a window of 1 MiB messages for bandwidth.
PairResult pair_test(transport::UcxChannel& ch, std::uint32_t peer, bool lead) {
  std::vector<std::byte> small(8), big(1 << 20);
  std::vector<double> samples;
  std::uint32_t other = lead ? peer : 0;
  for (int i = 0; i < 220; ++i) {
    auto t0 = Clock::now();
    if (lead) {
      ch.send_blocking(other, 1, small);
      ch.recv_blocking(other, 2, small);
    } else {
      ch.recv_blocking(other, 1, small);
      ch.send_blocking(other, 2, small);
    }
    if (i >= 20) samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
  }
  auto t0 = Clock::now();
  for (int round = 0; round < 8; ++round) {
    std::vector<std::unique_ptr<transport::UcxChannel::Request>> reqs;
    for (int w = 0; w < 8; ++w) reqs.push_back(lead ? ch.send(other, 3, big) : ch.recv(other, 3, big));
    ch.wait_all(reqs);
  }
  if (lead) ch.recv_blocking(other, 4, small);
  else ch.send_blocking(other, 4, small);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return {64.0 * big.size() / s / 1e9, transport::percentile(samples, 99)};
}

}  // namespace

int run_job_mode(const doctor::DoctorConfig& config, const doctor::GatherOptions& gather, const JobModeOptions& o) {
  auto boot = transport::PmixBootstrap::connect();
  const auto& me = boot->placement();
  doctor::GatherOptions g = gather;
  if (g.hostname.empty()) g.hostname = me.hostname;
  json mine;
  if (me.local_rank == 0) {  // one report per node
    auto facts = doctor::gather_facts(g);
    auto results = doctor::run_checks(facts, config);
    json failing = json::array();
    for (const auto& r : results)
      if (r.status == doctor::Status::fail) failing.push_back(r.check + ": " + r.seen);
    mine = {{"host", facts.hostname}, {"status", doctor::to_string(doctor::worst(results))}, {"failing", failing},
            {"snapshot", json::parse(doctor::snapshot_json(facts)).flatten()}};
  }
  std::string text = mine.is_null() ? "" : mine.dump();
  auto reports = boot->allgather("cnet.doctor.report", transport::as_bytes(text));

  // Pair tests: rank 0 against the first rank of every other node, one at a time.
  std::vector<std::uint32_t> node_leads;
  std::vector<std::string> lead_hosts;
  for (std::uint32_t r = 0; r < reports.size(); ++r)
    if (!reports[r].empty()) node_leads.push_back(r);
  transport::UcxChannel ch(*boot);
  std::map<std::string, PairResult> pairs;
  for (std::uint32_t r : node_leads) {
    if (r == 0) continue;
    if (me.rank == 0) pairs[ch.hostname_of(r)] = pair_test(ch, r, true);
    else if (me.rank == r) pair_test(ch, 0, false);
  }
  std::vector<std::byte> done(1);
  if (me.rank == 0)
    for (std::uint32_t r = 1; r < me.size; ++r) ch.send_blocking(r, 9, done);
  else
    ch.recv_blocking(0, 9, done);
  if (me.rank != 0) return 0;

  // What most nodes have, per setting; each node's departures from it.
  std::vector<json> nodes;
  for (auto r : node_leads) nodes.push_back(json::parse(std::string(reinterpret_cast<const char*>(reports[r].data()), reports[r].size())));
  std::map<std::string, std::map<std::string, int>> votes;
  for (const auto& n : nodes)
    for (auto& [k, v] : n["snapshot"].items()) ++votes[k][v.dump()];
  json baseline = json::object();
  if (!o.compare_baseline.empty()) {
    std::ifstream in(o.compare_baseline);
    if (!in) throw std::runtime_error("cannot read baseline " + o.compare_baseline);
    in >> baseline;
  }
  int bad = 0;
  json out = json::array(), saved = json::object();
  if (!o.json) std::printf("%-14s %-5s %10s %10s  %s\n", "node", "check", "GB/s", "p99(us)", "problems");
  for (const auto& n : nodes) {
    std::string host = n["host"];
    std::vector<std::string> problems;
    for (const auto& f : n["failing"]) problems.push_back(f.get<std::string>());
    for (auto& [k, v] : n["snapshot"].items()) {
      if (k == "/taken_on") continue;
      const auto& counts = votes[k];
      auto top = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; });
      if (top->first != v.dump() && top->second > 1) problems.push_back(k.substr(1) + " " + v.dump() + " (most nodes: " + top->first + ")");
    }
    PairResult p = pairs.count(host) ? pairs[host] : PairResult{};
    if (pairs.count(host)) {
      saved[host] = {{"gbytes", p.gbytes}, {"p99_us", p.p99_us}};
      if (baseline.contains(host)) {
        double was = baseline[host].value("gbytes", 0.0);
        if (was > 0 && p.gbytes < was * (1 - o.tolerance))
          problems.push_back("bandwidth to rank 0 " + std::to_string(p.gbytes) + " GB/s, baseline " + std::to_string(was));
      }
    }
    if (!problems.empty()) ++bad;
    std::string list;
    for (const auto& pr : problems) list += (list.empty() ? "" : "; ") + pr;
    if (o.json) out.push_back({{"host", host}, {"status", n["status"]}, {"gbytes", p.gbytes}, {"p99_us", p.p99_us}, {"problems", problems}});
    else if (pairs.count(host))
      std::printf("%-14s %-5s %10.2f %10.1f  %s\n", host.c_str(), n["status"].get<std::string>().c_str(), p.gbytes, p.p99_us, list.c_str());
    else
      std::printf("%-14s %-5s %10s %10s  %s\n", host.c_str(), n["status"].get<std::string>().c_str(), "(rank 0)", "", list.c_str());
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
  if (!o.save_baseline.empty()) std::ofstream(o.save_baseline) << saved.dump(2) << "\n";
  std::fflush(stdout);
  return bad ? 1 : 0;
}
