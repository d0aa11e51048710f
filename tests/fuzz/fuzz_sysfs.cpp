// What sysfs files may hold (a driver's odd rate text, a damaged snapshot): the input split into the
// files cnet reads for one RDMA port and one netdev, then read back; values it cannot parse are unknown.
#include <filesystem>
#include <fstream>

#include "cnet/topology/sysfs.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  std::string text = cnet::fuzz::text(data, size);
  static const char* const files[] = {"sys/class/infiniband/mlx5_0/ports/1/state", "sys/class/infiniband/mlx5_0/ports/1/rate",
                                      "sys/class/infiniband/mlx5_0/ports/1/link_layer", "sys/class/net/ib0/mtu",
                                      "sys/class/net/ib0/speed", "sys/class/infiniband_verbs/uverbs0/ibdev"};
  fs::path root = cnet::fuzz::scratch() / "root";
  std::size_t at = 0;
  for (const char* f : files) {
    std::size_t end = text.find('\0', at);
    std::string part = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    fs::create_directories((root / f).parent_path());
    std::ofstream(root / f, std::ios::binary | std::ios::trunc) << part;
  }
  cnet::topology::SysfsReader reader(root);
  reader.rdma_port("mlx5_0", 1);
  reader.rdma_ports("mlx5_0");
  reader.netdev("ib0");
  reader.rdma_device_of_verbs("uverbs0");
  cnet::topology::parse_ib_rate(text);
  return 0;
}
