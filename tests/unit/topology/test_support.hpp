#pragma once
// Topology tests: the real-machine fixtures, and scratch folders for fake sysfs trees.
#include <filesystem>
#include <string>

#include "../scratch_dir.hpp"
#include "cnet/topology/discover.hpp"

namespace cnet::topology::testing {

using TempDir = cnet::testing::ScratchDir;

inline std::filesystem::path fixture(const std::string& rel) { return std::filesystem::path(CNET_FIXTURES_DIR) / rel; }

// Discovery from one of the real-machine hwloc exports, e.g. load_fixture("nvidiaDGX2.xml").
inline NodeTopology load_fixture(const std::string& name) {
  DiscoveryOptions o;
  o.hwloc_xml = fixture("hwloc/" + name);
  return discover(o);
}

}  // namespace cnet::topology::testing
