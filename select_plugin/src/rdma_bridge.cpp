#include "rdma_bridge.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "cnet/spank/rdma_gres.hpp"
#include "cnet/spank/text_lists.hpp"

extern "C" char* cnet_rdma_device_name(const char* device_file, const char* type) {
  try {
    return strdup(cnet::scheduling::rdma_device_name("/", device_file ? device_file : "", type ? type : "").c_str());
  } catch (...) {
    return strdup(device_file ? device_file : "");
  }
}

extern "C" char* cnet_rdma_environment(const char* devices_csv) {
  try {
    auto devices = cnet::scheduling::split(devices_csv ? devices_csv : "");
    std::string out;
    for (const auto& [name, value] : cnet::scheduling::rdma_environment(devices)) out += (out.empty() ? "" : "\n") + name + "=" + value;
    return strdup(out.c_str());
  } catch (...) {
    return strdup("");
  }
}
