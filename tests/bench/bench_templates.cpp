// Template catalogue parsing scales with the file: the same parse on 256 KiB and on 1 MiB of templates
// (what job_submit/cnet's reader and --cnet-template=list do), printed as a ratio; linear is 4x, the
// quadratic parser this replaced took 12 s for 1 MiB. Target: ratio <= 5x, 1 MiB under 1 s.
//   bench_templates
#include <chrono>
#include <cstdio>
#include <string>

#include "cnet/scheduling/template_catalog.hpp"

namespace {

std::string catalogue(std::size_t bytes) {
  std::string text;
  for (unsigned i = 0; text.size() < bytes; ++i)
    text += "TemplateName=t" + std::to_string(i) + " Gpus=2 GpuType=a100 MinGpuMemory=40G Fabric=ib TimeLimit=1-00:00:00 "
            "Description=\"pipeline job " + std::to_string(i) + "\"\n";
  return text;
}

double best_seconds(const std::string& text) {
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    auto c = cnet::scheduling::TemplateCatalog::parse(text);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (c.templates().empty()) return -1;
    best = std::min(best, s);
  }
  return best;
}

}  // namespace

int main() {
  std::string small = catalogue(256u << 10), large = catalogue(1u << 20);
  double s = best_seconds(small), l = best_seconds(large);
  double ratio = l / s;
  bool met = ratio <= 5 && l < 1.0;
  std::printf("templates: parse 256 KiB %.1f ms, 1 MiB %.1f ms: ratio %.2fx (linear 4x; target <= 5x and 1 MiB < 1 s: %s)\n", s * 1e3,
              l * 1e3, ratio, met ? "met" : "MISSED");
  return met ? 0 : 1;
}
