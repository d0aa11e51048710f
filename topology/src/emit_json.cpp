// JSON schema cnet.topology/v2 (topology/README.md): written by cnet-topo and the slurmd-side cache,
// read back by the SPANK plugin in every job step, so everything classification and the emitters use
// round-trips. v1 documents (unknown numbers as 0) are still read.
#include <nlohmann/json.hpp>

#include "cnet/common/text.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/features.hpp"
#include "cnet/topology/paths.hpp"

namespace cnet::topology {
namespace {
using nlohmann::json;

constexpr const char* kJsonSchemaV1 = "cnet.topology/v1";

std::string hex4(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", v);
  return buf;
}
unsigned from_hex(const json& j) { return static_cast<unsigned>(std::stoul(j.get<std::string>(), nullptr, 16)); }

// Unknown numbers are null, never a 0 that reads as a measurement.
template <typename T>
json known(T value) {
  return value ? json(value) : json(nullptr);
}
template <typename T>
T number_or_unknown(const json& j) {
  return j.is_null() ? T{} : j.get<T>();
}

const char* link_kind(NvLink::Target t) {
  return t == NvLink::Target::gpu ? "gpu" : t == NvLink::Target::nvswitch ? "nvswitch" : "cpu";
}

json locality_json(const Locality& l) {
  json path = json::array();
  for (const auto& hop : l.pci_path)
    path.push_back({{"id", hop.id}, {"host_bridge", hop.host_bridge}, {"bus_id", hop.bus_id}, {"class", hex4(hop.class_id)},
                    {"vendor", hex4(hop.vendor_id)}, {"device", hex4(hop.device_id)}, {"subvendor", hex4(hop.subvendor_id)},
                    {"subdevice", hex4(hop.subdevice_id)}, {"link_gbytes_per_s", known(hop.link_gbytes_per_s)}});
  return {{"numa_node", l.numa_node}, {"package", l.package}, {"nodeset", l.nodeset}, {"cpuset", l.cpuset}, {"cpumask", l.cpumask},
          {"cores", common::compress_ranges(l.cores)}, {"package_cores", common::compress_ranges(l.package_cores)}, {"pci_path", path}};
}

json pci_json(const PciIdentity& p) {
  return {{"bus_id", p.bus_id},           {"class", hex4(p.class_id)},          {"vendor", hex4(p.vendor_id)},
          {"device", hex4(p.device_id)}, {"subvendor", hex4(p.subvendor_id)}, {"subdevice", hex4(p.subdevice_id)},
          {"link_gbytes_per_s", known(p.link_gbytes_per_s)}};
}

Locality locality_from(const json& j) {
  Locality l;
  l.numa_node = j.at("numa_node");
  l.package = j.value("package", -1);
  l.nodeset = j.at("nodeset");
  l.cpuset = j.at("cpuset");
  l.cpumask = j.at("cpumask");
  for (const auto& h : j.at("pci_path"))
    l.pci_path.push_back({h.at("id"), h.at("host_bridge"), h.at("bus_id"), from_hex(h.at("class")),
                          static_cast<std::uint16_t>(from_hex(h.at("vendor"))), static_cast<std::uint16_t>(from_hex(h.at("device"))),
                          static_cast<std::uint16_t>(from_hex(h.value("subvendor", json("0000")))),
                          static_cast<std::uint16_t>(from_hex(h.value("subdevice", json("0000")))),
                          number_or_unknown<float>(h.at("link_gbytes_per_s"))});
  auto ranges = [](const std::string& key, const std::string& text) {
    if (text.empty()) return std::vector<unsigned>{};
    auto parsed = common::parse_ranges(text, 1u << 20);
    if (!parsed) throw TopologyError("damaged topology JSON: " + key + " '" + common::printable(text, 64) + "' is not a list like 0-3,8");
    return std::move(*parsed);
  };
  l.cores = ranges("cores", j.at("cores"));
  l.package_cores = ranges("package_cores", j.value("package_cores", ""));
  return l;
}

PciIdentity pci_from(const json& j) {
  return {j.at("bus_id"), from_hex(j.at("class")), static_cast<std::uint16_t>(from_hex(j.at("vendor"))),
          static_cast<std::uint16_t>(from_hex(j.at("device"))), static_cast<std::uint16_t>(from_hex(j.at("subvendor"))),
          static_cast<std::uint16_t>(from_hex(j.at("subdevice"))), number_or_unknown<float>(j.at("link_gbytes_per_s"))};
}

// The path matrices grow with GPUs squared (4 million labels on a 2048-GPU node): written row by row
// as text rather than built as a JSON tree, and skipped when a topology is read back.
template <typename Peers>
void write_matrix(std::string& out, const char* name, const NodeTopology& topo, const Peers& peers, bool last) {
  out += "    \"";
  out += name;
  out += "\": [";
  for (std::size_t r = 0; r < topo.gpus.size(); ++r) {
    out += r ? ",\n      [" : "\n      [";
    for (std::size_t c = 0; c < peers.size(); ++c) {
      out += c ? ", \"" : "\"";
      out += classify(topo.gpus[r], peers[c]).label();
      out += '"';
    }
    out += ']';
  }
  out += topo.gpus.empty() ? "]" : "\n    ]";
  out += last ? "\n" : ",\n";
}

void append_paths(std::string& out, const NodeTopology& topo) {
  out.reserve(out.size() + topo.gpus.size() * (topo.gpus.size() + topo.nics.size()) * 8 + 64);
  out += "  \"paths\": {\n";
  write_matrix(out, "gpu_gpu", topo, topo.gpus, false);
  write_matrix(out, "gpu_nic", topo, topo.nics, true);
  out += "  }";
}

}  // namespace

std::string to_json(const NodeTopology& topo) {
  json j;
  j["schema"] = kJsonSchema;
  j["host"] = topo.hostname;
  j["cpu"] = {{"arch", topo.cpu.arch},     {"vendor", topo.cpu.vendor}, {"family", topo.cpu.family},
              {"model_number", topo.cpu.model}, {"model", topo.cpu.model_name}, {"packages", topo.packages},
              {"cores", topo.cores},       {"pus", topo.pus}};
  j["numa_nodes"] = json::array();
  for (const auto& n : topo.numa_nodes)
    j["numa_nodes"].push_back({{"os_index", n.os_index}, {"cpuset", n.cpuset}, {"cpumask", n.cpumask}, {"memory_bytes", known(n.memory_bytes)}});
  j["gpus"] = json::array();
  for (const auto& g : topo.gpus) {
    json links = g.nvlinks_known ? json::array() : json(nullptr);
    for (const auto& l : g.nvlinks) {
      if (links.is_null()) links = json::array();
      links.push_back({{"target", l.target_bus_id}, {"kind", link_kind(l.target)}, {"count", l.count}});
    }
    j["gpus"].push_back({{"index", g.index}, {"minor", g.minor}, {"vendor", g.vendor}, {"model", g.model},
                         {"gres_type", gres_type(g.model)}, {"memory_bytes", known(g.memory_bytes)},
                         {"pci", pci_json(g.pci)}, {"locality", locality_json(g.locality)}, {"nvlinks", links}});
  }
  j["nics"] = json::array();
  for (const auto& n : topo.nics)
    j["nics"].push_back({{"name", n.name}, {"kind", to_string(n.kind)}, {"netdev", n.netdev},
                         {"rdma_device", n.rdma_device}, {"verbs_device", n.verbs_device}, {"port", n.port}, {"state", n.state},
                         {"rate_gbps", known(n.rate_gbps)}, {"lanes", known(n.lanes)}, {"mtu", known(n.mtu)}, {"guid", n.guid},
                         {"system_guid", n.system_guid}, {"pci", pci_json(n.pci)}, {"locality", locality_json(n.locality)}});
  j["nvswitches"] = topo.nvswitch_bus_ids;
  j["gpudirect_rdma"] = topo.gpudirect_rdma.empty() ? json(nullptr) : json(topo.gpudirect_rdma);
  j["pairing"] = json::array();
  for (const auto& p : pair_gpus_with_nics(topo))
    j["pairing"].push_back({{"gpu", p.gpu}, {"nic", p.nic >= 0 ? json(topo.nics[static_cast<std::size_t>(p.nic)].name) : json(nullptr)},
                            {"path", p.nic >= 0 ? json(p.path.label()) : json(nullptr)}});
  j["notes"] = topo.notes;
  // The tree's dump ends in "\n}"; the matrices go in before it.
  std::string text = j.dump(2);
  text.resize(text.size() - 2);
  text += ",\n";
  append_paths(text, topo);
  text += "\n}\n";
  return text;
}

NodeTopology from_json(const std::string& text) {
  try {
    // "paths" and "pairing" are derived: not read, and not even kept while parsing.
    // Every fraction in the document is a link speed (GB/s): one that is negative or past 2^31 is refused,
    // since converting it to the whole or float field it lands in would be undefined.
    json::parser_callback_t skip_derived = [](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::value && parsed.is_number_float() && !(parsed.get<double>() >= 0 && parsed.get<double>() < 2147483648.0))
        throw TopologyError("a number in the topology JSON is out of range (" + parsed.dump() + "); regenerate it with cnet-topo --format json");
      return !(depth == 1 && event == json::parse_event_t::key && (parsed == "paths" || parsed == "pairing"));
    };
    json j = json::parse(text, skip_derived);
    std::string schema = j.is_object() ? j.value("schema", "") : "";
    if (schema != kJsonSchema && schema != kJsonSchemaV1)
      throw TopologyError("not a " + std::string(kJsonSchema) + " topology JSON document (schema '" + common::printable(schema, 64) +
                          "'); regenerate it with this version of cnet-topo --format json");
    bool v1 = schema == kJsonSchemaV1;
    NodeTopology t;
    t.hostname = j.at("host");
    const auto& cpu = j.at("cpu");
    t.cpu = {cpu.at("arch"), cpu.at("vendor"), cpu.at("family"), cpu.at("model_number"), cpu.at("model")};
    t.packages = cpu.at("packages");
    t.cores = cpu.at("cores");
    t.pus = cpu.at("pus");
    for (const auto& n : j.at("numa_nodes"))
      t.numa_nodes.push_back({n.at("os_index"), n.at("cpuset"), n.at("cpumask"), number_or_unknown<std::uint64_t>(n.at("memory_bytes"))});
    for (const auto& g : j.at("gpus")) {
      Gpu gpu{.index = g.at("index"), .minor = g.at("minor"), .pci = pci_from(g.at("pci")), .vendor = g.at("vendor"),
              .model = g.at("model"), .memory_bytes = number_or_unknown<std::uint64_t>(g.at("memory_bytes")),
              .locality = locality_from(g.at("locality")), .nvlinks = {}, .nvlinks_known = false};
      const json& links = g.at("nvlinks");
      for (const auto& l : links.is_null() ? json::array() : links) {
        std::string kind = l.at("kind");
        gpu.nvlinks.push_back({l.at("target"), kind == "gpu" ? NvLink::Target::gpu : kind == "nvswitch" ? NvLink::Target::nvswitch : NvLink::Target::cpu,
                               l.at("count")});
      }
      // v1 wrote [] for both "none" and "unknown"
      gpu.nvlinks_known = !links.is_null() && (!v1 || !gpu.nvlinks.empty());
      t.gpus.push_back(std::move(gpu));
    }
    for (const auto& n : j.at("nics")) {
      std::string kind = n.at("kind");
      // verbs_device is absent in files written before it existed
      t.nics.push_back({.name = n.at("name"), .netdev = n.at("netdev"), .rdma_device = n.at("rdma_device"),
                        .verbs_device = n.value("verbs_device", ""),
                        .kind = kind == "ib" ? NicKind::ib : kind == "roce" ? NicKind::roce : NicKind::eth,
                        .port = n.at("port"), .state = n.at("state"), .rate_gbps = number_or_unknown<unsigned>(n.at("rate_gbps")),
                        .lanes = number_or_unknown<unsigned>(n.at("lanes")), .mtu = number_or_unknown<unsigned>(n.at("mtu")),
                        .guid = n.at("guid"), .system_guid = n.value("system_guid", ""), .pci = pci_from(n.at("pci")),
                        .locality = locality_from(n.at("locality"))});
    }
    t.nvswitch_bus_ids = j.at("nvswitches").get<std::vector<std::string>>();
    if (auto it = j.find("gpudirect_rdma"); it != j.end() && !it->is_null()) t.gpudirect_rdma = it->get<std::string>();
    t.notes = j.at("notes").get<std::vector<std::string>>();
    // Everything that reads a topology indexes GPUs by Gpu::index: it must be their position.
    for (std::size_t i = 0; i < t.gpus.size(); ++i)
      if (t.gpus[i].index != i)
        throw TopologyError("damaged topology JSON: GPU " + std::to_string(i) + " says it is index " + std::to_string(t.gpus[i].index) +
                            "; regenerate it with cnet-topo --format json");
    return t;
  } catch (const json::exception& e) {
    throw TopologyError(std::string("damaged topology JSON: ") + e.what() + "; regenerate it with cnet-topo --format json");
  } catch (const std::invalid_argument& e) {
    throw TopologyError(std::string("damaged topology JSON: bad number (") + e.what() + ")");
  } catch (const std::out_of_range& e) {
    throw TopologyError(std::string("damaged topology JSON: number out of range (") + e.what() + ")");
  }
}

}  // namespace cnet::topology
