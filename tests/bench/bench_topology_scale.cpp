// Topology at scale: a synthetic 2048-GPU export (256 NUMA nodes of 8 GPUs and an HCA behind a switch,
// 1024 PUs), discovered and written in each format the way `cnet-topo --format F` does, each in its own
// process so its time and peak memory are its own; the peer is hwloc loading and re-exporting the same
// file. Half the GPUs as well, to show the growth: linear, or quadratic only in formats that are
// matrices by nature (json's paths, matrix).
//   bench_topology_scale [REPETITIONS]      target: every format < 1 s and < 200 MB at 2048 GPUs
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "../support/synthetic_hwloc.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "hwloc_peer.hpp"

namespace {

struct Cost {
  double seconds = 0;
  double peak_mb = 0;
};

// Runs `work` in a child; its wall time and its peak resident memory (wait4's ru_maxrss).
Cost in_child(const std::function<void()>& work) {
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    work();
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_topology_scale: a measured run failed\n");
    std::exit(2);
  }
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), usage.ru_maxrss / 1024.0};
}

Cost median_of(int repetitions, const std::function<void()>& work) {
  std::vector<Cost> runs;
  for (int i = 0; i < repetitions; ++i) runs.push_back(in_child(work));
  auto mid = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {mid(&Cost::seconds), mid(&Cost::peak_mb)};
}


}  // namespace

int main(int argc, char** argv) {
  int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  using Emitter = std::string (*)(const cnet::topology::NodeTopology&);
  const std::pair<const char*, Emitter> formats[] = {{"json", cnet::topology::to_json},       {"gres", cnet::topology::to_gres_conf},
                                                     {"features", cnet::topology::to_node_features}, {"nccl", cnet::topology::to_nccl_xml},
                                                     {"matrix", cnet::topology::to_matrix}};
  char dir[] = "/tmp/cnet-bench-topo-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  bool met = true;
  std::vector<std::pair<std::string, double>> at_half;
  for (unsigned numa_per_package : {4u, 8u}) {
    auto machine = cnet::testing::synthetic_scaled_machine(32, numa_per_package, 8, 1, 4);
    unsigned gpus = 32 * numa_per_package * 8;
    std::string xml = std::string(dir) + "/scaled-" + std::to_string(gpus) + ".xml";
    cnet::testing::write_synthetic_hwloc(machine, xml);
    Cost peer = median_of(repetitions, [&] { cnet::bench::hwloc_load_and_export(xml); });
    std::printf("%u GPUs: hwloc load+export %.3f s, %.0f MB (peer)\n", gpus, peer.seconds, peer.peak_mb);
    std::fflush(stdout);
    for (const auto& [name, emit] : formats) {
      Cost c = median_of(repetitions, [&, emit = emit] {
        cnet::topology::DiscoveryOptions o;
        o.hwloc_xml = xml;
        std::string out = emit(cnet::topology::discover(o));
        if (out.empty()) _exit(1);
      });
      std::string line = std::to_string(gpus) + " GPUs: " + name;
      std::printf("%-22s %.3f s, %4.0f MB  (%.1fx hwloc's time)", line.c_str(), c.seconds, c.peak_mb, c.seconds / peer.seconds);
      if (gpus == 2048) {
        bool ok = c.seconds < 1.0 && c.peak_mb < 200;
        met = met && ok;
        for (const auto& [half_name, half_seconds] : at_half)
          if (half_name == name) std::printf("  growth from 1024 GPUs %.1fx", c.seconds / half_seconds);
        std::printf("  %s\n", ok ? "ok" : "MISSED (< 1 s and < 200 MB)");
      } else {
        at_half.emplace_back(name, c.seconds);
        std::printf("\n");
      }
      std::fflush(stdout);
    }
  }
  std::string cleanup = std::string("rm -rf ") + dir;
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "bench_topology_scale: could not remove %s\n", dir);
  std::printf("topology scale: target every format < 1 s and < 200 MB at 2048 GPUs: %s\n", met ? "met" : "MISSED");
  return met ? 0 : 1;
}
