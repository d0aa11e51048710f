// An hwloc XML export handed to cnet-topo --hwloc-xml (or the SPANK plugin's hwloc_xml=): discovered and
// emitted in every format, or refused with TopologyError.
#include <cstdlib>

#include "cnet/topology/check.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  setenv("HWLOC_HIDE_ERRORS", "2", 1);
  cnet::topology::DiscoveryOptions o;
  o.hwloc_xml = cnet::fuzz::as_file(data, size, "topo.xml");
  try {
    auto t = cnet::topology::discover(o);
    cnet::topology::to_json(t);
    cnet::topology::to_gres_conf(t);
    cnet::topology::to_node_features(t);
    cnet::topology::to_nccl_xml(t);
    cnet::topology::to_matrix(t);
    cnet::topology::check_links(t);
  } catch (const cnet::topology::TopologyError&) {
  }
  return 0;
}
