// Topology discovery speed: cnet's full discovery plus every emitter on one hwloc XML export, next to
// the peer that does the least comparable work, hwloc itself loading and re-exporting the same XML
// (what `lstopo --of xml` does, in-process and as the real command).
//   bench_topology FIXTURE.xml [google-benchmark flags]
#include <benchmark/benchmark.h>
#include <hwloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "hwloc_peer.hpp"

namespace {
std::string g_xml;

void CnetDiscoverAndEmitAll(benchmark::State& state) {
  cnet::topology::DiscoveryOptions options;
  options.hwloc_xml = g_xml;
  for (auto _ : state) {
    auto topo = cnet::topology::discover(options);
    std::size_t bytes = cnet::topology::to_json(topo).size() + cnet::topology::to_gres_conf(topo).size() +
                        cnet::topology::to_node_features(topo).size() + cnet::topology::to_nccl_xml(topo).size() +
                        cnet::topology::to_matrix(topo).size();
    benchmark::DoNotOptimize(bytes);
  }
}

void HwlocLoadAndExportXml(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cnet::bench::hwloc_load_and_export(g_xml));
}

void LstopoOfXmlCommand(benchmark::State& state) {
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) {
      if (!freopen("/dev/null", "w", stdout)) _exit(126);
      execlp("lstopo-no-graphics", "lstopo-no-graphics", "--input", g_xml.c_str(), "--of", "xml", "-", nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("lstopo-no-graphics failed");
  }
}

BENCHMARK(CnetDiscoverAndEmitAll)->Unit(benchmark::kMillisecond);
BENCHMARK(HwlocLoadAndExportXml)->Unit(benchmark::kMillisecond);
BENCHMARK(LstopoOfXmlCommand)->Unit(benchmark::kMillisecond);
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::cerr << "usage: bench_topology FIXTURE.xml [benchmark flags]\n";
    return 2;
  }
  g_xml = argv[1];
  argv[1] = argv[0];
  --argc;
  ++argv;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
