// Slurm's config-line grammar and host lists (slurm.conf, gres.conf lines the doctor reads): parsed or
// refused with ConfigError, never a crash or an unbounded expansion.
#include "cnet/common/slurm_config.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = cnet::fuzz::text(data, size);
  try {
    for (const auto& line : cnet::common::parse_config_lines(text, "fuzz.conf"))
      for (const auto& [k, v] : line.pairs) cnet::common::expand_hostlist(v, 10000);
  } catch (const cnet::common::ConfigError&) {
  }
  return 0;
}
