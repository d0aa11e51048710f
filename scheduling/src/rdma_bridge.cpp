#include "cnet/scheduling/rdma_bridge.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "cnet/common/text.hpp"
#include "cnet/scheduling/rdma_gres.hpp"

using namespace cnet;

extern "C" char* cnet_rdma_device_port(const char* device_file, const char* type) {
  try {
    return strdup(scheduling::to_string(scheduling::rdma_device_port("/", device_file ? device_file : "", type ? type : "")).c_str());
  } catch (...) {
    return strdup(device_file ? device_file : "");
  }
}

extern "C" char* cnet_rdma_environment(const char* device_ports_csv) {
  try {
    std::vector<scheduling::RdmaPort> devices;
    for (const auto& d : common::split(device_ports_csv ? device_ports_csv : "")) devices.push_back(scheduling::parse_rdma_port(d));
    std::vector<std::string> lines;
    for (const auto& [name, value] : scheduling::rdma_environment(devices)) lines.push_back(name + "=" + value);
    return strdup(common::join(lines, "\n").c_str());
  } catch (...) {
    return strdup("");
  }
}
