#pragma once
// Discovery: fills a NodeTopology from hwloc (live, or an XML export), sysfs and NVML.

#include <filesystem>
#include <optional>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

struct DiscoveryOptions {
  // Load this hwloc XML export instead of looking at the machine we run on.
  std::optional<std::filesystem::path> hwloc_xml;
  // Root of the /sys and /proc trees to read NIC details from. Live discovery reads "/" unless told
  // otherwise (and then also points hwloc at it); with an XML export sysfs is read only when given.
  std::optional<std::filesystem::path> sysfs_root;
  // Ask NVML for GPU names, memory and NVLinks (live discovery only).
  bool use_nvml = true;
  // The node's name. Default: the export's HostName, this machine's name for live discovery, the
  // snapshot's recorded name for a /sys snapshot (which must then have one). Shortened at the first
  // '.', as slurmd names itself.
  std::optional<std::string> hostname;
};

// Throws TopologyError with a message naming the input and what to do when it cannot be read, when an
// export and a /sys snapshot are not of the same machine, or when two devices claim one bus id.
NodeTopology discover(const DiscoveryOptions& options = {});

}  // namespace cnet::topology
