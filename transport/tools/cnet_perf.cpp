// cnet-perf: the link check to run before any application. Under srun --mpi=pmix:
//   srun --mpi=pmix -N2 cnet-perf p2p          bandwidth and latency (avg/P50/P99) between ranks 0 and 1
//   srun --mpi=pmix -N2 cnet-perf allreduce    algbw and busbw (nccl-tests definitions) over all ranks
//   srun --mpi=pmix -N8 cnet-perf matrix --heatmap F.svg   every pair of nodes, one pair at a time: the
//                                              N x N bandwidth and P99, slow pairs and the nodes behind them
//   cnet-perf --local N p2p|allreduce|matrix   the same with N ranks on this machine, no Slurm
//   cnet-perf -s [--port P]  /  cnet-perf -c --server-ip A [--port P]   two hosts by hand, no Slurm
//   ... cnet-perf p2p --sweep UCX_RC_TX_QUEUE_LEN=256,1024   the link once per value of one UCX setting
// Rank 0 prints each message size as it finishes; --json prints the report at the end instead.
// Exit: 0 ok, 1 a size regressed against --compare-baseline, an allreduce result was wrong or a pair is slow,
// 2 bad arguments, 3 transport failure.
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <regex>
#include <set>
#include <vector>

#include "cnet/common/files.hpp"
#include "cnet/common/host.hpp"
#include "cnet/common/text.hpp"
#include "cnet/common/version.hpp"
#include "cnet/topology/nic_settings.hpp"
#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/collectives.hpp"
#include "cnet/transport/link_matrix.hpp"
#include "cnet/transport/link_test.hpp"
#include "cnet/transport/local_launcher.hpp"
#include "cnet/transport/perf_report.hpp"
#include "cnet/transport/setting_sweep.hpp"
#include "cnet/transport/tcp_bootstrap.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace po = boost::program_options;
using namespace cnet::transport;
using Clock = std::chrono::steady_clock;

namespace {

struct Settings {
  std::size_t min_size = 8, max_size = 64ull << 20;
  LinkTestOptions link;
  bool json = false;
  ReduceMode reduce = ReduceMode::fast;
};

// What rank r contributes at element i: not whole numbers, so the order of the additions shows in the
// last bits and the deterministic mode's promise (rank order, always) can be checked exactly.
float contribution(std::uint32_t r, std::size_t i) { return 1.0f + static_cast<float>((i * 2654435761u + r * 40503u) % 1024) / 1024.0f; }

// Elements of `got` that differ from the sum of every rank's contribution: added in rank order and
// compared bit for bit in deterministic mode; within float rounding of any order in fast mode.
long long wrong_elements(const std::vector<float>& got, std::uint32_t ranks, ReduceMode mode) {
  long long wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    float sum = contribution(0, i);
    for (std::uint32_t r = 1; r < ranks; ++r) sum += contribution(r, i);
    bool ok = mode == ReduceMode::deterministic ? got[i] == sum : std::fabs(got[i] - sum) <= 4e-7f * ranks * std::fabs(sum);
    wrong += !ok;
  }
  return wrong;
}

PerfRow allreduce_size(UcxChannel& ch, Collectives& coll, std::size_t bytes, const Settings& s) {
  std::size_t count = std::max<std::size_t>(bytes / sizeof(float), 1);
  std::vector<float> input(count), data(count);
  for (std::size_t i = 0; i < count; ++i) input[i] = contribution(ch.rank(), i);
  unsigned n = s.link.repetitions(bytes);
  unsigned warmup = std::max(1u, s.link.warmup / 4);
  std::vector<double> samples;
  for (unsigned i = 0; i < n + warmup; ++i) {
    data = input;  // a fresh copy: reducing the same buffer again would grow it to inf
    coll.barrier();
    auto t0 = Clock::now();
    coll.allreduce_sum(std::span(data), s.reduce);
    if (i >= warmup) samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  double sum = 0;
  for (double v : samples) sum += v;
  // The collective takes as long as its slowest rank: every rank's average, the largest counts.
  double mine = sum / static_cast<double>(samples.size());
  std::vector<double> averages(ch.size());
  coll.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(averages)));
  PerfRow row{count * sizeof(float)};
  row.latency_avg_us = *std::max_element(averages.begin(), averages.end());
  row.latency_p50_us = percentile(samples, 50);
  row.latency_p99_us = percentile(samples, 99);
  row.bandwidth_gbytes = static_cast<double>(row.bytes) / (row.latency_avg_us * 1e-6) / 1e9;
  row.bus_gbytes = row.bandwidth_gbytes * allreduce_bus_factor(ch.size());
  std::vector<double> wrong = {static_cast<double>(wrong_elements(data, ch.size(), s.reduce))};
  coll.allreduce_sum(std::span(wrong), ReduceMode::deterministic);
  row.wrong = static_cast<long long>(wrong[0]);
  return row;
}

std::string distinct_hosts(const std::vector<std::string>& hosts) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& h : hosts)
    if (seen.insert(h).second) out.push_back(h);
  return cnet::common::join(out, ",");
}

// --nic: a network interface ("eth0") or an RDMA port ("mlx5_0:1") of this host, as UCX_NET_DEVICES
// names them. Refused with what the host has when it has no such device.
void check_nic(const std::string& nic) {
  static const std::regex name("[A-Za-z0-9_.-]{1,32}(:[0-9]{1,3})?");
  if (!std::regex_match(nic, name)) throw po::error("--nic '" + cnet::common::printable(nic, 40) + "' is not an interface name like eth0 or mlx5_0:1");
  auto colon = nic.find(':');
  std::filesystem::path where = colon == std::string::npos ? std::filesystem::path("/sys/class/net") / nic
                                                           : std::filesystem::path("/sys/class/infiniband") / nic.substr(0, colon) / "ports" / nic.substr(colon + 1);
  std::error_code ec;
  if (std::filesystem::exists(where, ec)) return;
  std::vector<std::string> have;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) have.push_back(e.path().filename().string());
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) have.push_back(e.path().filename().string() + ":1");
  std::sort(have.begin(), have.end());
  throw po::error("--nic " + nic + ": no such " + (colon == std::string::npos ? "network interface" : "RDMA port") + " here (this host has: " +
                  cnet::common::join(have, ", ") + ")");
}

// One channel per value, made while the value is set (UCX reads it then), the link measured over it.
// Rank 0 prints each value's rows as they finish, then the table with the best by P99 marked.
int run_sweep(Bootstrap& boot, const UcxOptions& ucx, const SettingSweep& sweep, const Settings& s) {
  std::vector<SweepPoint> points;
  bool lead = boot.placement().rank == 0;
  for (const auto& value : sweep.values) {
    ScopedSetting applied(sweep.variable, value);
    UcxChannel ch(boot, ucx);
    if (ch.size() < 2) throw std::runtime_error("p2p needs two ranks: srun -N2 --ntasks-per-node=1");
    if (lead && !s.json && points.empty())
      std::fprintf(stderr, "cnet-perf: sweeping %s over %zu values between %s and %s (transports %s)\n", sweep.variable.c_str(),
                   sweep.values.size(), ch.hostname_of(0).c_str(), ch.hostname_of(1).c_str(), ch.transports_to(lead ? 1 : 0).c_str());
    PerfReport report = link_test(ch, 0, 1, s.link, [&](const PerfRow& row) {
      if (!s.json) std::fprintf(stderr, "cnet-perf: %s=%s %s: %.3f GB/s, P99 %.2f us\n", sweep.variable.c_str(), value.c_str(),
                                format_size(row.bytes).c_str(), row.bandwidth_gbytes, row.latency_p99_us);
    });
    points.push_back({value, report});
    Collectives(ch).barrier();  // the follower keeps its channel until the leader has all it needs
  }
  if (!lead) return 0;
  std::printf("%s", s.json ? sweep_json(sweep.variable, points).c_str()
                           : ("# cnet-perf p2p sweep of " + sweep.variable + " (" + points.front().report.transports + ")\n" +
                              sweep_table(sweep.variable, points)).c_str());
  return 0;
}

// Everything the command line asks for, checked before anything is measured.
struct Invocation {
  Settings s;
  std::string mode, save, compare, prometheus, nic, heatmap;
  double tolerance = 0.1;
  unsigned local = 0, wait_s = 300;
  std::uint16_t port = 18515;
  std::string server_ip, bind_address = "127.0.0.1", key_file;
  char standalone = 0;  // 's' server, 'c' client, 0 under srun or --local
  bool detect_peer_failure = true;
  SettingSweep sweep;
};

constexpr const char* kExitCodes = "exit: 0 ok, 1 regression against the baseline or a wrong allreduce result, 2 bad arguments, 3 transport failure\n";

// The command line, checked; nullopt after --help. Throws po::error naming what is wrong.
std::optional<Invocation> parse_command_line(int argc, char** argv) {
  Invocation in;
  Settings& s = in.s;
  std::string reduce = "fast", peer_failure = "on", sweep_argument;
  po::options_description opts("cnet-perf p2p|allreduce|matrix [options]   (under srun --mpi=pmix)");
  opts.add_options()("help,h", "show this help")("version", "print the version")
      ("min-size", po::value(&s.min_size)->default_value(s.min_size), "smallest message in bytes")
      ("max-size", po::value(&s.max_size)->default_value(s.max_size), "largest message in bytes (sizes grow x4)")
      ("iters", po::value(&s.link.iters)->default_value(s.link.iters), "repetitions per size: ping-pongs and messages (p2p), calls (allreduce); by default up to 200, fewer for large sizes; given, exactly this many at every size")
      ("warmup", po::value(&s.link.warmup)->default_value(s.link.warmup), "untimed repetitions first")
      ("reduce", po::value(&reduce)->default_value(reduce), "allreduce: fast or deterministic")
      ("local", po::value(&in.local), "run N ranks on this machine with cnet's own PMIx server")
      ("server,s", "standalone: wait for one client, then measure (rank 0)")
      ("client,c", "standalone: connect to a cnet-perf -s (rank 1)")
      ("server-ip", po::value(&in.server_ip), "with -c: the server's address")
      ("port", po::value(&in.port)->default_value(in.port), "standalone TCP port")
      ("bind", po::value(&in.bind_address)->default_value(in.bind_address), "with -s: the address to listen on (0.0.0.0: every interface)")
      ("nic", po::value(&in.nic), "measure over this interface or RDMA port (eth0, mlx5_0:1): UCX_NET_DEVICES, and with -s the address to listen on")
      ("key-file", po::value(&in.key_file), "standalone: the shared key both sides prove they know (else $CNET_PERF_KEY; -s makes one up and prints it)")
      ("wait", po::value(&in.wait_s)->default_value(in.wait_s), "standalone: seconds to wait for the other side")
      ("peer-failure", po::value(&peer_failure)->default_value(peer_failure),
       "on: a dead peer is an error (same-node peers over shared memory, watched by their process; others over tcp/ib); off: no detection")
      ("sweep", po::value(&sweep_argument),
       "p2p: measure once per value of one UCX setting, VAR=v1,v2,... (UCX_RC_TX_QUEUE_LEN=256,512,1024,2048); "
       "the best value by P99 is marked. One size (1 MiB) unless --min-size/--max-size are given")
      ("json", "print the report as JSON at the end")
      ("save-baseline", po::value(&in.save), "write the report to this file as a baseline")
      ("compare-baseline", po::value(&in.compare), "exit 1 naming every size that regressed against this baseline (read and checked before measuring)")
      ("tolerance", po::value(&in.tolerance)->default_value(in.tolerance), "allowed regression, 0.1 = 10%")
      ("prometheus", po::value(&in.prometheus), "also write the numbers for node_exporter's textfile collector (FILE.prom)")
      ("heatmap", po::value(&in.heatmap), "matrix: draw the bandwidth and P99 of every pair here (FILE.svg)");
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&in.mode));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("mode", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::ostringstream usage;
    usage << opts;
    throw po::error(std::string(e.what()) + "\n" + usage.str());
  }
  if (vm.count("help")) {
    std::cout << opts << kExitCodes;
    return std::nullopt;
  }
  s.json = vm.count("json") > 0;
  in.standalone = vm.count("server") ? 's' : vm.count("client") ? 'c' : 0;
  if (vm.count("server") && vm.count("client")) throw po::error("-s and -c exclude each other");
  if (in.standalone == 'c' && in.server_ip.empty()) throw po::error("-c needs --server-ip");
  if (in.standalone && in.mode.empty()) in.mode = "p2p";
  if (in.standalone && in.mode != "p2p") throw po::error("standalone mode measures p2p between the two hosts");
  if (in.mode != "p2p" && in.mode != "allreduce" && in.mode != "matrix") throw po::error("the first argument must be p2p, allreduce or matrix");
  if (in.standalone && in.mode == "matrix") throw po::error("standalone mode measures p2p between the two hosts");
  if (!in.heatmap.empty()) {
    if (in.mode != "matrix") throw po::error("--heatmap draws every pair: cnet-perf matrix --heatmap FILE.svg");
    if (!in.heatmap.ends_with(".svg")) throw po::error("--heatmap " + in.heatmap + ": the picture is SVG, name it FILE.svg");
    const auto folder = std::filesystem::path(in.heatmap).parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder)) throw po::error("--heatmap " + in.heatmap + ": folder " + folder.string() + " does not exist");
  }
  // Every pair: the quick test's two sizes (8 B latency, 1 MiB bandwidth) unless sizes are given.
  if (in.mode == "matrix" && vm["min-size"].defaulted() && vm["max-size"].defaulted()) s.min_size = 8, s.max_size = 1u << 20, s.link = LinkTestOptions::quick();
  if (reduce != "fast" && reduce != "deterministic") throw po::error("--reduce must be fast or deterministic");
  if (peer_failure != "on" && peer_failure != "off") throw po::error("--peer-failure must be on or off");
  in.detect_peer_failure = peer_failure == "on";
  s.reduce = reduce == "fast" ? ReduceMode::fast : ReduceMode::deterministic;
  if (s.min_size == 0 || s.min_size > s.max_size || s.max_size > (1ull << 32)) throw po::error("need 0 < --min-size <= --max-size <= 4 GiB");
  if (s.link.iters == 0) throw po::error("--iters must be at least 1");
  s.link.exact_iters = !vm["iters"].defaulted();
  if (in.tolerance <= 0 || in.tolerance >= 1) throw po::error("--tolerance must be between 0 and 1");
  if (!sweep_argument.empty()) {
    if (in.mode != "p2p") throw po::error("--sweep measures p2p");
    if (in.standalone) throw po::error("--sweep runs under srun or with --local N (both sides must sweep alike)");
    if (vm.count("save-baseline") || vm.count("compare-baseline")) throw po::error("--sweep does not save or compare baselines: run once with the value chosen");
    try {
      in.sweep = parse_setting_sweep(sweep_argument);
    } catch (const std::invalid_argument& e) {
      throw po::error(e.what());
    }
    for (const auto& value : in.sweep.values)
      if (auto refused = ucx_refusal(in.sweep.variable, value); !refused.empty()) throw po::error("--sweep: " + refused);
    if (vm["min-size"].defaulted() && vm["max-size"].defaulted()) s.min_size = s.max_size = 1u << 20;
  }
  s.link.sizes = LinkTestOptions::size_ladder(s.min_size, s.max_size);
  if (!in.prometheus.empty()) cnet::common::check_textfile_path(in.prometheus);
  if (!in.nic.empty()) {
    check_nic(in.nic);
    if (in.standalone == 's' && vm["bind"].defaulted()) {
      if (in.nic.find(':') != std::string::npos) throw po::error("-s listens on an IP interface: give --bind ADDRESS with an RDMA --nic");
      in.bind_address = cnet::common::interface_address(in.nic);
      if (in.bind_address.empty()) throw po::error("--nic " + in.nic + " has no IPv4 address to listen on (is it up?); give --bind ADDRESS");
    }
  }
  return in;
}

// Standalone mode's shared key: --key-file, else $CNET_PERF_KEY; empty on a server given none.
std::string standalone_key(const Invocation& in) {
  std::string key;
  try {
    if (!in.key_file.empty()) key = cnet::common::trim(cnet::common::read_file(in.key_file, 4096));
    else if (const char* env = std::getenv("CNET_PERF_KEY")) key = env;
  } catch (const std::exception& e) {
    throw po::error(std::string("--key-file: ") + e.what());
  }
  if (!key.empty() && key.size() < 16) throw po::error("the key must be at least 16 characters (cnet-perf -s prints a random one when given none)");
  if (key.empty() && in.standalone == 'c')
    throw po::error("-c needs the server's key: CNET_PERF_KEY=... or --key-file F (cnet-perf -s prints one when it has none)");
  return key;
}

// --compare-baseline, read and parsed by the rank that compares, before anything is measured: a
// missing or unreadable baseline is a bad argument, not a failed link test after minutes of measuring.
std::vector<PerfReport> read_baseline(const std::string& path) {
  try {
    return baseline_from_json(cnet::common::read_file(path, 16u << 20));
  } catch (const std::exception& e) {
    throw po::error("--compare-baseline " + path + ": " + e.what() + " (save one first with --save-baseline " + path + ")");
  }
}

// The baseline's report for this run's mode and hosts, known before measuring; throws po::error when
// the file holds none.
const PerfReport& baseline_for(const std::vector<PerfReport>& baseline, const Invocation& in, std::vector<std::string> hosts) {
  PerfReport now;
  now.mode = in.mode;
  now.hosts = std::move(hosts);
  const PerfReport* against = matching_baseline(baseline, now);
  if (!against) throw po::error("--compare-baseline " + in.compare + " holds no " + in.mode + " baseline for " + cnet::common::join(now.hosts, ","));
  return *against;
}

// Rank 0's verdict once the report is in: wrong allreduce results, the baseline saved or compared, the
// Prometheus textfile. Returns the exit code.
int judge(const Invocation& in, const PerfReport& report, const PerfReport* against) {
  int rc = 0;
  for (const auto& row : report.rows)
    if (row.wrong > 0) {
      std::fprintf(stderr, "cnet-perf: %s: %lld of %zu elements differ from the expected sum\n", format_size(row.bytes).c_str(),
                   row.wrong, row.bytes / sizeof(float));
      rc = 1;
    }
  if (!in.save.empty()) {
    cnet::common::write_file_atomically(in.save, baseline_json({report}));
    std::fprintf(stderr, "cnet-perf: baseline saved to %s\n", in.save.c_str());
  }
  int regressed_sizes = -1;
  if (against) {
    auto regressed = regressions(*against, report, in.tolerance);
    for (const auto& line : regressed) std::fprintf(stderr, "cnet-perf: regressed: %s\n", line.c_str());
    for (const auto& line : driver_changes(*against, report))
      std::fprintf(stderr, "cnet-perf: NIC driver or firmware changed since the baseline: %s%s\n", line.c_str(),
                   regressed.empty() ? "" : " (a new driver can turn offloads on or off: cnet-doctor compare shows which)");
    regressed_sizes = static_cast<int>(regressed.size());
    if (regressed.empty())
      std::fprintf(stderr, "cnet-perf: no size regressed more than %.0f%% against %s\n", in.tolerance * 100, in.compare.c_str());
    if (regressed_sizes > 0) rc = 1;
  }
  if (!in.prometheus.empty())
    cnet::common::write_textfile(in.prometheus, cnet::common::prometheus_text(report_metrics(report, regressed_sizes, static_cast<double>(std::time(nullptr)))));
  return rc;
}

// Every pair of nodes (the first rank on each; every rank when all share one host, as with --local),
// one pair at a time; rank 0 prints the matrix, names slow pairs and the nodes behind them, draws the
// heatmap, saves or compares the pairs' baseline. Exit 1 when a pair is slow.
int run_matrix(const Invocation& in, Bootstrap& boot, UcxChannel& ch, std::optional<std::vector<PerfReport>> baseline) {
  std::vector<std::uint32_t> leaders;
  std::set<std::string> seen;
  bool one_host = true;
  for (std::uint32_t r = 0; r < ch.size(); ++r) one_host = one_host && ch.hostname_of(r) == ch.hostname_of(0);
  for (std::uint32_t r = 0; r < ch.size(); ++r)
    if (one_host || seen.insert(ch.hostname_of(r)).second) leaders.push_back(r);
  if (leaders.size() < 2) throw std::runtime_error("matrix needs two nodes at least: srun -N2 (or more) --ntasks-per-node=1");
  const bool lead = ch.rank() == 0;
  if (lead && !in.compare.empty() && !baseline) {  // before measuring: a bad file stops every rank at once
    try {
      baseline = read_baseline(in.compare);
    } catch (const po::error& e) {
      std::fprintf(stderr, "cnet-perf: %s\n", e.what());
      boot.abort(2, e.what());
    }
  }
  if (lead && !in.s.json) {
    std::printf("# cnet-perf matrix: %zu nodes, %zu pairs, one at a time\n", leaders.size(), leaders.size() * (leaders.size() - 1) / 2);
    std::fflush(stdout);
  }
  LinkMatrix m = measure_link_matrix(ch, boot, leaders, in.s.link);
  if (!lead) return 0;
  if (one_host)  // ranks of one machine: named by rank, or every row would read the same
    for (std::size_t i = 0; i < m.hosts.size(); ++i) m.hosts[i] += "/" + std::to_string(leaders[i]);
  if (baseline) compare_with_baseline(m, *baseline);
  const auto findings = find_slow_pairs(m, in.tolerance);
  if (in.s.json) {
    std::cout << to_json(m, findings);
  } else {
    std::printf("%-14s", "GB/s | P99 us");
    for (const auto& h : m.hosts) std::printf(" %14s", h.c_str());
    std::printf("\n");
    for (std::size_t i = 0; i < m.hosts.size(); ++i) {
      std::printf("%-14s", m.hosts[i].c_str());
      for (std::size_t j = 0; j < m.hosts.size(); ++j)
        if (i == j) std::printf(" %14s", "-");
        else std::printf(" %6.2f|%7.1f", m.gbytes[i][j], m.p99_us[i][j]);
      std::printf("\n");
    }
    for (const auto& line : findings.lines) std::printf("%s\n", line.c_str());
  }
  if (!in.heatmap.empty()) {
    cnet::common::write_file_atomically(in.heatmap, heatmap_svg(m, findings, "cnet-perf matrix: " + std::to_string(m.hosts.size()) + " nodes, every pair"));
    std::fprintf(stderr, "cnet-perf: heatmap -> %s\n", in.heatmap.c_str());
  }
  if (!in.save.empty()) {
    cnet::common::write_file_atomically(in.save, baseline_json(m.reports));
    std::fprintf(stderr, "cnet-perf: baseline of %zu pairs saved to %s\n", m.reports.size(), in.save.c_str());
  }
  if (!in.prometheus.empty()) {  // every pair's link series, one family per metric name
    std::vector<cnet::common::MetricFamily> families;
    for (const auto& report : m.reports)
      for (auto& family : report_metrics(report, -1, static_cast<double>(std::time(nullptr)))) {
        auto same = std::find_if(families.begin(), families.end(), [&](const auto& f) { return f.name == family.name; });
        if (same == families.end()) families.push_back(std::move(family));
        else same->samples.insert(same->samples.end(), family.samples.begin(), family.samples.end());
      }
    cnet::common::write_textfile(in.prometheus, cnet::common::prometheus_text(families));
  }
  return findings.slow_pairs.empty() ? 0 : 1;
}

std::unique_ptr<Bootstrap> connect(const Invocation& in, std::string key) {
  auto log = [](const std::string& line) { std::fprintf(stderr, "cnet-perf: %s\n", line.c_str()); };
  if (in.standalone == 's') {
    if (key.empty()) {
      key = random_key();
      log("no key given; start the client with CNET_PERF_KEY=" + key);
    }
    log("waiting for cnet-perf -c on " + in.bind_address + " port " + std::to_string(in.port));
    return TcpBootstrap::serve(in.bind_address, in.port, std::chrono::seconds(in.wait_s), key, log);
  }
  if (in.standalone == 'c') return TcpBootstrap::connect(in.server_ip, in.port, std::chrono::seconds(in.wait_s), key);
  return PmixBootstrap::connect();
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::common::print_version_if_asked(argc, argv, "cnet-perf")) return 0;
  Invocation in;
  std::string key;
  std::optional<std::vector<PerfReport>> baseline;
  try {
    auto parsed = parse_command_line(argc, argv);
    if (!parsed) return 0;
    in = std::move(*parsed);
    if (in.standalone) key = standalone_key(in);
    // By hand the server compares: it reads the baseline before it waits for the client.
    if (in.standalone == 's' && !in.compare.empty()) baseline = read_baseline(in.compare);
  } catch (const std::exception& e) {
    std::cerr << "cnet-perf: " << e.what() << "\n";
    return 2;
  }
  Settings& s = in.s;

  if (in.local > 0) {  // become the launcher: the same command, minus --local, once per rank
    auto launch = relaunch_locally(in.local, argc, argv);
    try {
      return run_local(launch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cnet-perf: %s\n", e.what());
      return 3;
    }
  }

  try {
    std::unique_ptr<Bootstrap> boot = connect(in, key);
    UcxOptions ucx;
    ucx.detect_peer_failure = in.detect_peer_failure;
    ucx.net_devices = in.nic;
    if (!in.sweep.values.empty()) return run_sweep(*boot, ucx, in.sweep, s);
    UcxChannel ch(*boot, ucx);
    if (in.mode == "matrix") return run_matrix(in, *boot, ch, baseline);
    Collectives coll(ch);
    if (in.mode == "p2p" && ch.size() < 2) throw std::runtime_error("p2p needs two ranks: srun -N2 --ntasks-per-node=1");
    std::vector<std::string> hosts;
    for (std::uint32_t r = 0; r < ch.size(); ++r) hosts.push_back(ch.hostname_of(r));
    std::string transports = ch.size() > 1 ? ch.transports_to(ch.rank() == 0 ? 1 : 0) : "self";
    bool lead = ch.rank() == 0;
    // The baseline, checked before measuring by the rank that compares: a missing or foreign one stops
    // every rank at once (exit 2), not after minutes of measuring.
    const PerfReport* against = nullptr;
    if (lead && !in.compare.empty()) {
      try {
        if (!baseline) baseline = read_baseline(in.compare);
        against = &baseline_for(*baseline, in, in.mode == "p2p" ? std::vector<std::string>{hosts[0], hosts[1]} : hosts);
      } catch (const po::error& e) {
        std::fprintf(stderr, "cnet-perf: %s\n", e.what());
        if (in.standalone) return 2;
        boot->abort(2, e.what());
      }
    }
    auto banner = [&](unsigned ranks) {
      std::printf("# cnet-perf %s: %u ranks on %s (transports %s%s)\n%s", in.mode.c_str(), ranks, distinct_hosts(hosts).c_str(),
                  transports.c_str(), in.nic.empty() ? "" : (", nic " + in.nic).c_str(), table_header(in.mode).c_str());
      std::fflush(stdout);
    };
    auto print = [&](const PerfRow& row) {
      std::printf("%s", table_row(in.mode, row).c_str());
      std::fflush(stdout);
    };

    // Each host's driver and firmware of the device measured (every NIC's when the traffic stayed in
    // memory) go into the report, so a baseline can tell a driver change.
    std::string measured = in.nic.empty() ? network_device_of(transports) : in.nic;
    auto drivers = boot->allgather_text("cnet.perf.drivers", cnet::topology::measured_drivers(cnet::topology::read_nic_settings("/", cnet::topology::read_ethtool), measured, cnet::topology::read_ethtool));
    PerfReport report;
    if (in.mode == "p2p") {
      if (lead && !s.json) banner(2);
      report = link_test(ch, 0, 1, s.link, [&](const PerfRow& row) {
        if (!s.json) print(row);
      });
      // By hand, both sides want the numbers: rank 0 hands its report to rank 1.
      auto reports = boot->allgather_text("cnet.perf.report", lead ? to_json(report) : "");
      if (in.standalone && !lead) {
        report = report_from_json(reports[0]);
        if (!s.json) {
          banner(2);
          for (const auto& row : report.rows) print(row);
        }
      }
      coll.barrier();
      for (std::uint32_t r : {0u, 1u}) report.nic_drivers[hosts[r]] = drivers[r];
    } else {
      report = {in.mode, ch.size(), transports, hosts, {}};
      if (lead && !s.json) banner(ch.size());
      for (std::size_t bytes : s.link.sizes) {
        PerfRow row = allreduce_size(ch, coll, bytes, s);
        report.rows.push_back(row);
        if (lead && !s.json) print(row);
      }
      for (std::uint32_t r = 0; r < ch.size(); ++r) report.nic_drivers[hosts[r]] = drivers[r];
    }
    if (!lead && !in.standalone) return 0;
    if (s.json) std::cout << to_json(report);
    if (!lead) {  // the client by hand: its own copy of the report, no verdict of its own but wrong sums
      for (const auto& row : report.rows)
        if (row.wrong > 0) return 1;
      return 0;
    }
    return judge(in, report, against);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnet-perf: %s\n", e.what());
    return 3;
  }
}
