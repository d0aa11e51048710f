#pragma once
// GPU names, memory, minor numbers and NVLinks from NVML, loaded with dlopen so cnet needs no NVIDIA
// library to build or run. On a machine without the driver it reports why and returns nothing.

#include <cstdint>
#include <string>
#include <vector>

namespace cnet::topology {

struct NvmlGpu {
  std::string bus_id;  // normalised "0000:3b:00.0"
  std::string name;
  std::uint64_t memory_bytes = 0;
  unsigned minor = 0;
  std::vector<std::string> nvlink_remote_bus_ids;  // one entry per active link
};

struct NvmlReport {
  bool available = false;
  std::string why_not;  // when not available: "libnvidia-ml.so.1 not found", ...
  std::vector<NvmlGpu> gpus;
};

NvmlReport query_nvml();

// "00000000:3B:00.0" -> "0000:3b:00.0"
std::string normalise_bus_id(const std::string& bus_id);

}  // namespace cnet::topology
