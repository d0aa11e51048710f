#include "cnet/topology/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace cnet::topology {
namespace {

// The slice of nvml.h we use; these layouts are part of NVML's stable ABI.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr unsigned kMaxNvLinks = 18;

struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
  }
  template <typename F>
  F symbol(const char* name) const {
    return reinterpret_cast<F>(dlsym(handle, name));
  }
};

}  // namespace

std::string normalise_bus_id(const std::string& bus_id) {
  std::string s = bus_id;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  // NVML pads the domain to 8 digits; Linux and hwloc use 4.
  auto colon = s.find(':');
  if (colon == 8 && s.compare(0, 4, "0000") == 0) s = s.substr(4);
  return s;
}

NvmlReport query_nvml() {
  NvmlReport report;
  Library lib;
  lib.handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    report.why_not = "libnvidia-ml.so.1 not found (no NVIDIA driver on this node)";
    return report;
  }
  auto init = lib.symbol<nvmlReturn_t (*)()>("nvmlInit_v2");
  auto shutdown = lib.symbol<nvmlReturn_t (*)()>("nvmlShutdown");
  auto count_fn = lib.symbol<nvmlReturn_t (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  auto handle_fn = lib.symbol<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  auto pci_fn = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>("nvmlDeviceGetPciInfo_v3");
  auto name_fn = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>("nvmlDeviceGetName");
  auto mem_fn = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>("nvmlDeviceGetMemoryInfo");
  auto minor_fn = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetMinorNumber");
  auto link_state_fn = lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>("nvmlDeviceGetNvLinkState");
  auto link_pci_fn =
      lib.symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t*)>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  if (!init || !shutdown || !count_fn || !handle_fn || !pci_fn || !name_fn) {
    report.why_not = "libnvidia-ml.so.1 lacks the v2/v3 entry points (driver too old)";
    return report;
  }
  if (int rc = init(); rc != 0) {
    report.why_not = "nvmlInit failed with NVML error " + std::to_string(rc);
    return report;
  }
  unsigned count = 0;
  if (count_fn(&count) == 0) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      nvmlPciInfo_t pci{};
      if (handle_fn(i, &dev) != 0 || pci_fn(dev, &pci) != 0) continue;
      NvmlGpu gpu;
      gpu.bus_id = normalise_bus_id(pci.busId);
      char name[96] = {};
      if (name_fn(dev, name, sizeof name) == 0) gpu.name = name;
      nvmlMemory_t mem{};
      if (mem_fn && mem_fn(dev, &mem) == 0) gpu.memory_bytes = mem.total;
      if (minor_fn) minor_fn(dev, &gpu.minor);
      for (unsigned link = 0; link_state_fn && link_pci_fn && link < kMaxNvLinks; ++link) {
        int active = 0;
        nvmlPciInfo_t remote{};
        if (link_state_fn(dev, link, &active) != 0 || !active || link_pci_fn(dev, link, &remote) != 0) continue;
        gpu.nvlink_remote_bus_ids.push_back(normalise_bus_id(remote.busId));
      }
      report.gpus.push_back(std::move(gpu));
    }
  }
  shutdown();
  report.available = true;
  return report;
}

}  // namespace cnet::topology
