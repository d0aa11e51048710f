// NicSettings as JSON: how a reading made in a child with a deadline (a driver's ioctl may hang) comes
// back to the process that asked.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cnet/topology/nic_settings.hpp"

namespace cnet::topology {
namespace {

using nlohmann::json;

json rings_json(const EthtoolAnswers::Rings& r) { return {{"rx", r.rx}, {"rx_max", r.rx_max}, {"tx", r.tx}, {"tx_max", r.tx_max}}; }

json channels_json(const EthtoolAnswers::Channels& c) {
  return {{"combined", c.combined}, {"combined_max", c.combined_max}, {"rx", c.rx}, {"rx_max", c.rx_max}, {"tx", c.tx}, {"tx_max", c.tx_max}};
}

}  // namespace

std::string nic_settings_to_json(const std::vector<NicSettings>& nics) {
  json out = json::array();
  for (const auto& n : nics) {
    json irqs = json::array();
    for (const auto& i : n.irqs) irqs.push_back({{"irq", i.irq}, {"cpus", i.cpus}});
    json j = {{"netdev", n.netdev}, {"rdma_device", n.rdma_device}, {"rx_queues", n.rx_queues}, {"tx_queues", n.tx_queues},
              {"numa_node", n.numa_node}, {"numa_cpus", n.numa_cpus}, {"irqs", irqs}, {"driver", n.driver},
              {"driver_version", n.driver_version}, {"firmware", n.firmware}, {"offloads", n.offloads}, {"speed_mbps", n.speed_mbps}};
    if (n.rings) j["rings"] = rings_json(*n.rings);
    if (n.channels) j["channels"] = channels_json(*n.channels);
    out.push_back(std::move(j));
  }
  return out.dump();
}

std::vector<NicSettings> nic_settings_from_json(const std::string& text) {
  std::vector<NicSettings> out;
  try {
    for (const auto& j : json::parse(text)) {
      NicSettings n;
      j.at("netdev").get_to(n.netdev);
      j.at("rdma_device").get_to(n.rdma_device);
      j.at("rx_queues").get_to(n.rx_queues);
      j.at("tx_queues").get_to(n.tx_queues);
      j.at("numa_node").get_to(n.numa_node);
      j.at("numa_cpus").get_to(n.numa_cpus);
      for (const auto& i : j.at("irqs")) n.irqs.push_back({i.at("irq").get<unsigned>(), i.at("cpus").get<std::vector<unsigned>>()});
      j.at("driver").get_to(n.driver);
      j.at("driver_version").get_to(n.driver_version);
      j.at("firmware").get_to(n.firmware);
      j.at("offloads").get_to(n.offloads);
      j.at("speed_mbps").get_to(n.speed_mbps);
      if (j.contains("rings")) {
        const auto& r = j["rings"];
        n.rings = EthtoolAnswers::Rings{r.at("rx"), r.at("rx_max"), r.at("tx"), r.at("tx_max")};
      }
      if (j.contains("channels")) {
        const auto& c = j["channels"];
        n.channels = EthtoolAnswers::Channels{c.at("combined"), c.at("combined_max"), c.at("rx"), c.at("rx_max"), c.at("tx"), c.at("tx_max")};
      }
      out.push_back(std::move(n));
    }
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("NIC settings are not in cnet's JSON form: ") + e.what());
  }
  return out;
}

}  // namespace cnet::topology
