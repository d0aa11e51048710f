// The topology cache (cnet.topology/v2, v1 still read) the SPANK plugin reads in every step: a damaged or forged file
// is refused with TopologyError, never trusted into a crash.
#include "cnet/topology/check.hpp"
#include "cnet/topology/emit.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto t = cnet::topology::from_json(cnet::fuzz::text(data, size));
    cnet::topology::to_nccl_xml(t);
    cnet::topology::to_matrix(t);
    cnet::topology::check_links(t);
  } catch (const cnet::topology::TopologyError&) {
  }
  return 0;
}
