// local_run N PROGRAM [ARGS...]: runs PROGRAM as N ranks of one PMIx job on this machine through
// LocalLauncher (what cnet-perf/cnet-run --local do), so transport tests run without Slurm too.
#include <cstdio>
#include <cstdlib>

#include "cnet/transport/local_launcher.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: local_run N PROGRAM [ARGS...]\n");
    return 2;
  }
  cnet::transport::LocalLaunch launch;
  launch.ranks = static_cast<unsigned>(std::atoi(argv[1]));
  launch.timeout = std::chrono::seconds(120);
  for (int i = 2; i < argc; ++i) launch.argv.push_back(argv[i]);
  try {
    return cnet::transport::run_local(launch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "local_run: %s\n", e.what());
    return 3;
  }
}
