// cnet-perf: the link check to run before any application. Under srun --mpi=pmix:
//   srun --mpi=pmix -N2 cnet-perf p2p          bandwidth and latency (avg/P50/P99) between ranks 0 and 1
//   srun --mpi=pmix -N2 cnet-perf allreduce    algbw and busbw (nccl-tests definitions) over all ranks
//   cnet-perf --local N p2p|allreduce          the same with N ranks on this machine, no Slurm
//   cnet-perf -s [--port P]  /  cnet-perf -c --server-ip A [--port P]   two hosts by hand, no Slurm
// Rank 0 prints each message size as it finishes; --json prints the report at the end instead.
// Exit: 0 ok, 1 a size regressed against --compare-baseline, 2 bad arguments, 3 transport failure.
#include <boost/program_options.hpp>

#include <ctime>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <vector>

#include "cnet/version.hpp"
#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/collectives.hpp"
#include "cnet/transport/local_launcher.hpp"
#include "cnet/transport/perf_report.hpp"
#include "cnet/transport/tcp_bootstrap.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace po = boost::program_options;
using namespace cnet::transport;
using Clock = std::chrono::steady_clock;

namespace {

struct Settings {
  std::size_t min_size = 8, max_size = 64ull << 20;
  unsigned iters = 200, warmup = 20, window = 16;
  bool json = false;
  ReduceMode reduce = ReduceMode::fast;
};

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Fewer repetitions for large messages so every size takes a similar, bounded time.
unsigned scaled(unsigned iters, std::size_t bytes) {
  std::size_t budget = 256ull << 20;  // bytes moved per size and direction
  return static_cast<unsigned>(std::clamp<std::size_t>(budget / std::max<std::size_t>(bytes, 1), 5, iters));
}

void print_row(const PerfReport& report, const PerfRow& row, const Settings& s) {
  if (s.json) return;
  std::printf("%12zu %12.3f %10.2f %10.3f %10.2f %10.2f %10.2f\n", row.bytes, row.bandwidth_gbytes, row.bandwidth_gbytes * 8,
              report.mode == "p2p" ? row.bandwidth_gbytes : row.bus_gbytes, row.latency_avg_us, row.latency_p50_us,
              row.latency_p99_us);
  std::fflush(stdout);
}

PerfRow p2p_size(UcxChannel& ch, std::size_t bytes, const Settings& s) {
  std::vector<std::byte> buf(bytes), reply_buf(bytes), ack(0);
  std::uint32_t me = ch.rank();
  PerfRow row{bytes};
  if (me > 1) return row;
  std::uint32_t peer = 1 - me;
  // latency: ping-pong, one sample per round trip (half of it). Receives are posted before the message
  // can arrive, as ucx_perftest does, so no sample pays for the unexpected-message path.
  unsigned n = scaled(s.iters, bytes);
  std::vector<double> samples;
  auto pending = me == 1 ? ch.recv(peer, 1, buf) : nullptr;
  for (unsigned i = 0; i < n + s.warmup; ++i) {
    auto t0 = Clock::now();
    if (me == 0) {
      auto reply = ch.recv(peer, 2, reply_buf);
      auto ping = ch.send(peer, 1, buf);
      ch.wait(*ping);
      ch.wait(*reply);
    } else {
      ch.wait(*pending);
      if (i + 1 < n + s.warmup) pending = ch.recv(peer, 1, buf);
      ch.send_blocking(peer, 2, reply_buf);
    }
    if (i >= s.warmup) samples.push_back(micros(Clock::now() - t0) / 2);
  }
  double sum = 0;
  for (double v : samples) sum += v;
  row.latency_avg_us = sum / samples.size();
  row.latency_p50_us = percentile(samples, 50);
  row.latency_p99_us = percentile(samples, 99);
  // bandwidth: a window of messages in flight, then one acknowledgement
  unsigned rounds = std::max(2u, scaled(s.iters, bytes * s.window));
  Clock::time_point start;
  for (unsigned round = 0; round < rounds + 1; ++round) {
    if (round == 1) start = Clock::now();  // round 0 warms up
    std::vector<std::unique_ptr<UcxChannel::Request>> reqs;
    for (unsigned w = 0; w < s.window; ++w)
      reqs.push_back(me == 0 ? ch.send(peer, 3, buf) : ch.recv(peer, 3, buf));
    ch.wait_all(reqs);
    if (me == 0) ch.recv_blocking(peer, 4, ack);
    else ch.send_blocking(peer, 4, ack);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  row.bandwidth_gbytes = static_cast<double>(bytes) * s.window * rounds / seconds / 1e9;
  row.bus_gbytes = row.bandwidth_gbytes;
  return row;
}

PerfRow allreduce_size(UcxChannel& ch, Collectives& coll, std::size_t bytes, const Settings& s) {
  std::vector<float> data(std::max<std::size_t>(bytes / sizeof(float), 1), 1.0f);
  unsigned n = scaled(s.iters, bytes);
  std::vector<double> samples;
  for (unsigned i = 0; i < n + s.warmup / 4; ++i) {
    coll.barrier();
    auto t0 = Clock::now();
    coll.allreduce_sum(std::span(data), s.reduce);
    if (i >= s.warmup / 4) samples.push_back(micros(Clock::now() - t0));
  }
  // Every rank's time counts: the slowest rank's average is the collective's time.
  double sum = 0;
  for (double v : samples) sum += v;
  std::vector<double> avg = {sum / samples.size()};
  coll.allreduce_sum(std::span(avg), ReduceMode::deterministic);
  PerfRow row{data.size() * sizeof(float)};
  row.latency_avg_us = avg[0] / ch.size();
  row.latency_p50_us = percentile(samples, 50);
  row.latency_p99_us = percentile(samples, 99);
  row.bandwidth_gbytes = static_cast<double>(row.bytes) / (row.latency_avg_us * 1e-6) / 1e9;
  row.bus_gbytes = row.bandwidth_gbytes * allreduce_bus_factor(ch.size());
  return row;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read baseline " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::print_version_if_asked(argc, argv, "cnet-perf")) return 0;
  Settings s;
  std::string mode, save, compare, reduce = "fast";
  char standalone = 0;
  std::string peer_failure = "on";
  double tolerance = 0.1;
  std::string prometheus;
  unsigned local = 0, wait_s = 300;
  std::uint16_t port = 18515;
  std::string server_ip, bind_address;
  po::options_description opts("cnet-perf p2p|allreduce [options]   (under srun --mpi=pmix)");
  opts.add_options()("help,h", "show this help")("version", "print the version")
      ("min-size", po::value(&s.min_size)->default_value(s.min_size), "smallest message in bytes")
      ("max-size", po::value(&s.max_size)->default_value(s.max_size), "largest message in bytes (sizes grow x4)")
      ("iters", po::value(&s.iters)->default_value(s.iters), "repetitions per size (fewer for large sizes)")
      ("warmup", po::value(&s.warmup)->default_value(s.warmup), "untimed repetitions first")
      ("reduce", po::value(&reduce)->default_value(reduce), "allreduce: fast or deterministic")
      ("local", po::value(&local), "run N ranks on this machine with cnet's own PMIx server")
      ("server,s", "standalone: wait for one client, then measure (rank 0)")
      ("client,c", "standalone: connect to a cnet-perf -s (rank 1)")
      ("server-ip", po::value(&server_ip), "with -c: the server's address")
      ("port", po::value(&port)->default_value(port), "standalone TCP port")
      ("bind", po::value(&bind_address), "with -s: listen on this address only (default: all)")
      ("wait", po::value(&wait_s)->default_value(wait_s), "standalone: seconds to wait for the other side")
      ("peer-failure", po::value(&peer_failure)->default_value(peer_failure),
       "on: a dead peer is an error (UCX then needs tcp/ib, also within a node); off: shared memory within a node")
      ("json", "print the report as JSON at the end")
      ("save-baseline", po::value(&save), "write the report to this file")
      ("compare-baseline", po::value(&compare), "exit 1 naming every size that regressed against this file")
      ("tolerance", po::value(&tolerance)->default_value(tolerance), "allowed regression, 0.1 = 10%")
      ("prometheus", po::value(&prometheus), "also write the numbers for node_exporter's textfile collector (FILE.prom)");
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&mode));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("mode", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "exit: 0 ok, 1 regression against the baseline, 2 bad arguments, 3 transport failure\n";
      return 0;
    }
    s.json = vm.count("json") > 0;
    standalone = vm.count("server") ? 's' : vm.count("client") ? 'c' : 0;
    if (vm.count("server") && vm.count("client")) throw po::error("-s and -c exclude each other");
    if (standalone == 'c' && server_ip.empty()) throw po::error("-c needs --server-ip");
    if (standalone && mode.empty()) mode = "p2p";
    if (standalone && mode != "p2p") throw po::error("standalone mode measures p2p between the two hosts");
    if (mode != "p2p" && mode != "allreduce") throw po::error("the first argument must be p2p or allreduce");
    if (reduce != "fast" && reduce != "deterministic") throw po::error("--reduce must be fast or deterministic");
    if (peer_failure != "on" && peer_failure != "off") throw po::error("--peer-failure must be on or off");
    s.reduce = reduce == "fast" ? ReduceMode::fast : ReduceMode::deterministic;
    if (s.min_size == 0 || s.min_size > s.max_size || s.max_size > (1ull << 32)) throw po::error("need 0 < --min-size <= --max-size <= 4 GiB");
    if (tolerance <= 0 || tolerance >= 1) throw po::error("--tolerance must be between 0 and 1");
  } catch (const po::error& e) {
    std::cerr << "cnet-perf: " << e.what() << "\n" << opts;
    return 2;
  }
  try {
    if (!prometheus.empty()) cnet::metrics::check_textfile_path(prometheus);
  } catch (const std::exception& e) {
    std::cerr << "cnet-perf: --prometheus " << e.what() << "\n";
    return 2;
  }

  if (local > 0) {  // become the launcher: the same command, minus --local, once per rank
    auto launch = relaunch_locally(local, argc, argv);
    try {
      return run_local(launch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cnet-perf: %s\n", e.what());
      return 3;
    }
  }

  try {
    std::unique_ptr<Bootstrap> boot;
    auto log = [](const std::string& line) { std::fprintf(stderr, "cnet-perf: %s\n", line.c_str()); };
    if (standalone == 's') {
      log("waiting for cnet-perf -c on port " + std::to_string(port));
      boot = TcpBootstrap::serve(bind_address, port, std::chrono::seconds(wait_s), log);
    } else if (standalone == 'c') {
      boot = TcpBootstrap::connect(server_ip, port, std::chrono::seconds(wait_s));
    } else {
      boot = PmixBootstrap::connect();
    }
    UcxChannel ch(*boot, UcxOptions{peer_failure == "on"});
    Collectives coll(ch);
    if (mode == "p2p" && ch.size() < 2) throw std::runtime_error("p2p needs two ranks: srun -N2 --ntasks-per-node=1");
    PerfReport report{mode, ch.size(), ch.size() > 1 ? ch.transports_to(1 % ch.size()) : "self", {}, {}};
    for (std::uint32_t r = 0; r < ch.size(); ++r) report.hosts.push_back(ch.hostname_of(r));
    bool lead = ch.rank() == 0 || standalone;  // by hand, both sides want to see the numbers
    if (lead && !s.json) {
      std::string hosts;
      std::set<std::string> seen;
      for (const auto& h : report.hosts)
        if (seen.insert(h).second) hosts += (hosts.empty() ? "" : ",") + h;
      std::printf("# cnet-perf %s: %u ranks on %s (transports %s)\n", mode.c_str(), ch.size(), hosts.c_str(),
                  report.transports.c_str());
      std::printf("# %10s %12s %10s %10s %10s %10s %10s\n", "size(B)", mode == "p2p" ? "bw(GB/s)" : "algbw(GB/s)", "bw(Gb/s)",
                  mode == "p2p" ? "bw(GB/s)" : "busbw(GB/s)", mode == "p2p" ? "lat.avg(us)" : "time.avg(us)", "p50(us)", "p99(us)");
    }
    for (std::size_t bytes = s.min_size; bytes <= s.max_size; bytes *= 4) {
      PerfRow row = mode == "p2p" ? p2p_size(ch, bytes, s) : allreduce_size(ch, coll, bytes, s);
      coll.barrier();
      report.rows.push_back(row);
      if (lead) print_row(report, row, s);
    }
    if (!lead) return 0;
    if (s.json) std::cout << to_json(report);
    if (!save.empty()) {
      std::ofstream(save) << to_json(report);
      std::fprintf(stderr, "cnet-perf: baseline saved to %s\n", save.c_str());
    }
    int regressed_sizes = -1;
    if (!compare.empty()) {
      auto regressed = regressions(report_from_json(read_file(compare)), report, tolerance);
      for (const auto& line : regressed) std::fprintf(stderr, "cnet-perf: regressed: %s\n", line.c_str());
      regressed_sizes = static_cast<int>(regressed.size());
      if (regressed.empty())
        std::fprintf(stderr, "cnet-perf: no size regressed more than %.0f%% against %s\n", tolerance * 100, compare.c_str());
    }
    if (!prometheus.empty() && ch.rank() == 0)
      cnet::metrics::write_textfile(prometheus, cnet::metrics::to_text(report_metrics(report, regressed_sizes, static_cast<double>(std::time(nullptr)))));
    return regressed_sizes > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnet-perf: %s\n", e.what());
    return 3;
  }
}
