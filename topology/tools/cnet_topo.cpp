// cnet-topo: discover this node's GPU/NIC/PCIe/NUMA topology and print it for Slurm, NCCL and humans.
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <iostream>
#include <map>

#include "cnet/common/files.hpp"
#include "cnet/common/version.hpp"
#include "cnet/topology/check.hpp"
#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/render_svg.hpp"

namespace po = boost::program_options;
using namespace cnet::topology;

namespace {

constexpr int kOk = 0, kFindings = 1, kUsage = 2;

const char* kUsageText =
    "usage: cnet-topo [--hwloc-xml F] [--sysfs-root D [--hostname H]] [--no-nvml] --format json|gres|features|nccl|matrix|dot|svg [-o F]\n"
    "       cnet-topo check [--hwloc-xml F] [--sysfs-root D] [--min-rate-gbps N] [--json]\n"
    "exit: 0 ok (check: no findings), 1 check found problems or could not check what was asked,\n"
    "      2 bad arguments or unreadable input\n";

// One finding per line for people; kind and aspect for scripts.
std::string findings_text(const std::vector<Finding>& findings, const NodeTopology& topo) {
  std::string text;
  for (const auto& f : findings)
    text += (f.kind == FindingKind::unknown ? "unknown: " : "") + f.subject + ": " + f.problem + " -- fix: " + f.fix + "\n";
  if (findings.empty())
    text = "ok: " + std::to_string(topo.nics.size()) + " NICs, " + std::to_string(topo.gpus.size()) + " GPUs, no link problems\n";
  return text;
}

std::string findings_json(const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  std::map<std::string, int> counts = {{"link_fault", 0}, {"placement", 0}, {"unknown", 0}};
  for (const auto& f : findings) {
    list.push_back({{"subject", f.subject}, {"problem", f.problem}, {"fix", f.fix}, {"kind", to_string(f.kind)}, {"aspect", f.aspect}});
    ++counts[to_string(f.kind)];
  }
  return nlohmann::json{{"findings", list}, {"counts", counts}}.dump(2) + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::common::print_version_if_asked(argc, argv, "cnet-topo")) return 0;
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("version", "print the version")
      ("format,f", po::value<std::string>()->default_value("matrix"), "json, gres, features, nccl, matrix, dot (Graphviz) or svg (a picture)")
      ("hwloc-xml", po::value<std::string>(), "read this hwloc XML export instead of the live machine")
      ("sysfs-root", po::value<std::string>(), "root of the /sys and /proc trees to read (default /)")
      ("hostname", po::value<std::string>(), "the node's name (default: the export's, this machine's, or the /sys tree's)")
      ("no-nvml", "do not ask NVML for GPU details")
      ("output,o", po::value<std::string>(), "write to this file instead of stdout")
      ("min-rate-gbps", po::value<unsigned>()->default_value(0), "check: flag NICs negotiated below this rate")
      ("json", "check: print findings as JSON");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description positional;
  positional.add("command", 1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "cnet-topo: " << e.what() << "\n" << kUsageText;
    return kUsage;
  }
  if (vm.count("help")) {
    std::cout << kUsageText << opts;
    return kOk;
  }
  std::string command = vm.count("command") ? vm["command"].as<std::string>() : "";
  if (!command.empty() && command != "check") {
    std::cerr << "cnet-topo: unknown command '" << command << "' (the only command is 'check')\n" << kUsageText;
    return kUsage;
  }

  static const std::map<std::string, std::function<std::string(const NodeTopology&)>> formats = {
      {"json", to_json}, {"gres", to_gres_conf}, {"features", to_node_features}, {"nccl", to_nccl_xml}, {"matrix", to_matrix},
      {"dot", to_dot}, {"svg", [](const NodeTopology& t) { return render_svg(to_dot(t)); }}};
  auto format = formats.find(vm["format"].as<std::string>());
  if (command.empty() && format == formats.end()) {
    std::cerr << "cnet-topo: unknown --format '" << vm["format"].as<std::string>()
              << "' (choose json, gres, features, nccl, matrix, dot or svg)\n";
    return kUsage;
  }

  try {
    DiscoveryOptions discovery;
    if (vm.count("hwloc-xml")) discovery.hwloc_xml = vm["hwloc-xml"].as<std::string>();
    if (vm.count("sysfs-root")) discovery.sysfs_root = vm["sysfs-root"].as<std::string>();
    discovery.use_nvml = !vm.count("no-nvml");
    if (vm.count("hostname")) discovery.hostname = vm["hostname"].as<std::string>();
    NodeTopology topo = discover(discovery);
    for (const auto& note : topo.notes) std::cerr << "cnet-topo: note: " << note << "\n";

    std::string text;
    int rc = kOk;
    if (command == "check") {
      CheckOptions check;
      check.min_rate_gbps = vm["min-rate-gbps"].as<unsigned>();
      auto findings = check_links(topo, check);
      text = vm.count("json") ? findings_json(findings) : findings_text(findings, topo);
      rc = findings.empty() ? kOk : kFindings;
    } else {
      text = format->second(topo);
    }
    if (vm.count("output")) cnet::common::write_file_atomically(vm["output"].as<std::string>(), text);
    else std::cout << text;
    return rc;
  } catch (const std::exception& e) {
    std::cerr << "cnet-topo: " << e.what() << "\n";
    return kUsage;
  }
}
