// Rewrites a Slurm plugin file's plugin_version in place, so a test can have a plugin that looks built
// for another Slurm release (what a site gets from mixing packages).
//   set_plugin_version PLUGIN.so 0x180b05
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cnet/doctor/slurm_plugins.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: set_plugin_version PLUGIN.so VERSION\n"), 2;
  auto sym = cnet::doctor::find_dynamic_symbol(argv[1], "plugin_version");
  if (!sym || sym->size != 4) return std::fprintf(stderr, "%s has no plugin_version\n", argv[1]), 1;
  std::uint32_t v = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 0));
  std::fstream f(argv[1], std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(sym->file_offset));
  return f.write(reinterpret_cast<const char*>(&v), 4) ? 0 : 1;
}
