// Machines the real-machine fixtures do not cover, built as synthetic hwloc exports and discovered the
// way cnet-topo does: AMD NPS4 packages, HCAs with DOWN ports, PCIe switches, cards with two functions,
// FQDN host names, 1024-PU nodes. Each asserts the pairing, the verdict or the file NCCL and Slurm get.
#include <gtest/gtest.h>

#include <regex>

#include "../../support/synthetic_hwloc.hpp"
#include "cnet/topology/check.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/features.hpp"
#include "cnet/topology/paths.hpp"
#include "test_support.hpp"

using namespace cnet::topology;
using namespace cnet::testing;
using cnet::topology::testing::TempDir;

namespace {

NodeTopology discover_machine(const SyntheticMachine& m, const TempDir& d, const std::string& name = "node.xml") {
  write_synthetic_hwloc(m, d.path() / name);
  DiscoveryOptions o;
  o.hwloc_xml = d.path() / name;
  return discover(o);
}

// Two packages of four NUMA nodes each (NPS4), no devices yet.
SyntheticMachine nps4() {
  SyntheticMachine m;
  m.packages = 2;
  m.numa.resize(8);
  return m;
}

SyntheticSlot slot(std::vector<SyntheticFunction> functions, bool behind_switch = false) {
  return {std::move(functions), behind_switch};
}

const Nic& paired_nic(const NodeTopology& t, unsigned gpu) {
  auto pairs = pair_gpus_with_nics(t);
  if (pairs.at(gpu).nic < 0) throw std::runtime_error("GPU" + std::to_string(gpu) + " has no NIC");
  return t.nics.at(static_cast<std::size_t>(pairs[gpu].nic));
}

std::vector<Finding> of_aspect(const std::vector<Finding>& all, const std::string& aspect) {
  std::vector<Finding> out;
  for (const auto& f : all)
    if (f.aspect == aspect) out.push_back(f);
  return out;
}

// NCCL's own reading of an affinity attribute (ncclStrToCpuset): 32-bit hex words separated by commas,
// the last one CPUs 0-31; at most 255 characters survive its XML parser.
std::vector<unsigned> nccl_cpus(const std::string& mask) {
  std::vector<std::uint32_t> words;
  std::stringstream in(mask);
  for (std::string w; std::getline(in, w, ',');)
    if (!w.empty()) words.push_back(static_cast<std::uint32_t>(std::stoul(w, nullptr, 16)));
  std::vector<unsigned> cpus;
  for (std::size_t i = 0; i < words.size(); ++i)
    for (unsigned bit = 0; bit < 32; ++bit)
      if (words[words.size() - 1 - i] >> bit & 1u) cpus.push_back(static_cast<unsigned>(i * 32 + bit));
  return cpus;
}

}  // namespace

// NPS4: a GPU and a NIC on one package but different NUMA nodes are closer than across the socket, and
// that is a healthy node, not "no NIC on the socket".
TEST(RealMachines, Nps4SamePackageIsNotAcrossTheSocket) {
  TempDir d;
  auto m = nps4();
  m.numa[0].slots = {slot({synthetic_hca("mlx5_0", "ib0")})};
  m.numa[1].slots = {slot({synthetic_gpu()})};
  m.numa[4].slots = {slot({synthetic_hca("mlx5_1", "ib1")})};
  m.numa[5].slots = {slot({synthetic_gpu()})};
  auto t = discover_machine(m, d);
  ASSERT_EQ(t.gpus.size(), 2u);
  ASSERT_EQ(t.nics.size(), 2u);
  EXPECT_EQ(classify(t.gpus[0], t.nics[0]).label(), "PKG") << "NUMA 1 and NUMA 0 share package 0";
  EXPECT_EQ(classify(t.gpus[0], t.nics[1]).label(), "SYS");
  EXPECT_EQ(classify(t.gpus[0], t.gpus[1]).label(), "SYS");
  EXPECT_EQ(paired_nic(t, 0).name, "mlx5_0");
  EXPECT_EQ(paired_nic(t, 1).name, "mlx5_1");
  auto findings = check_links(t);
  EXPECT_TRUE(findings.empty()) << findings.front().subject << ": " << findings.front().problem;
  // gres.conf's Cores= covers the whole socket: Slurm 23.02+ sets a node with part-socket ranges INVAL.
  auto gres = to_gres_conf(t);
  EXPECT_NE(gres.find("Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15\n"), std::string::npos) << gres;
  EXPECT_NE(gres.find("Name=rdma Type=mlx5_1 File=/dev/infiniband/uverbs1 Cores=16-31\n"), std::string::npos) << gres;
  EXPECT_EQ(t.gpus[0].locality.cores.size(), 4u) << "the NUMA node's own cores stay known, for binding";
}

// Pairing prefers the NIC on the GPU's own package even when the other package's NIC sorts first.
TEST(RealMachines, Nps4PairsWithinThePackage) {
  TempDir d;
  auto m = nps4();
  m.numa[1].slots = {slot({synthetic_hca("mlx5_0", "ib0")})};  // package 0, lower bus id
  m.numa[4].slots = {slot({synthetic_hca("mlx5_1", "ib1")})};  // package 1
  m.numa[6].slots = {slot({synthetic_gpu()})};                 // package 1
  auto t = discover_machine(m, d);
  EXPECT_EQ(paired_nic(t, 0).name, "mlx5_1");
  // Only the other package's NIC left: that is what check reports.
  m.numa[4].slots.clear();
  t = discover_machine(m, d, "one-nic.xml");
  auto pairing = of_aspect(check_links(t), "pairing");
  ASSERT_EQ(pairing.size(), 1u);
  EXPECT_EQ(pairing[0].subject, "GPU0");
  EXPECT_EQ(pairing[0].kind, FindingKind::placement);
}

// A DOWN HCA under the GPU's own switch never wins over an ACTIVE one further away, not even when the
// ACTIVE one is already used by another GPU.
TEST(RealMachines, DownPortsAreNeverPaired) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu(), synthetic_gpu(), synthetic_hca("mlx5_0", "ib0", "1")}, true),
                     slot({synthetic_hca("mlx5_1", "ib1")})};
  auto t = discover_machine(m, d);
  ASSERT_EQ(t.nics.size(), 2u);
  EXPECT_EQ(t.nics[0].state, "DOWN");
  EXPECT_EQ(paired_nic(t, 0).name, "mlx5_1");
  EXPECT_EQ(paired_nic(t, 1).name, "mlx5_1");
  EXPECT_EQ(pair_gpus_with_nics(t)[0].path.label(), "PHB");
}

TEST(RealMachines, AGpuWithOnlyDownNicsGetsNoneAndCheckSaysWhy) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu(), synthetic_hca("mlx5_0", "ib0", "1")}, true),
                     slot({synthetic_hca("mlx5_1", "ib1", "1")})};
  auto t = discover_machine(m, d);
  EXPECT_EQ(pair_gpus_with_nics(t)[0].nic, -1);
  auto pairing = of_aspect(check_links(t), "pairing");
  ASSERT_EQ(pairing.size(), 1u);
  EXPECT_NE(pairing[0].problem.find("mlx5_0 (DOWN)"), std::string::npos) << pairing[0].problem;
  EXPECT_NE(pairing[0].problem.find("mlx5_1 (DOWN)"), std::string::npos) << pairing[0].problem;
}

// What an hwloc export cannot tell (GPUDirect RDMA support) is left for NCCL to detect, not claimed.
TEST(RealMachines, NcclFileClaimsNoGpuDirectItDidNotSee) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu(), synthetic_hca("mlx5_0", "ib0")}, true)};
  auto xml = to_nccl_xml(discover_machine(m, d));
  EXPECT_EQ(xml.find("gdr="), std::string::npos) << xml;
  for (const char* unknown_as_zero : {"speed=\"0\"", "sm=\"0\"", "count=\"0\"", "guid=\"0x\""})
    EXPECT_EQ(xml.find(unknown_as_zero), std::string::npos) << unknown_as_zero << " written for unknown:\n" << xml;
}

// Two functions of one card (RoCE and IB) are one ASIC to NCCL: the guid is the system image GUID.
// Switch ports carry the subsystem ids hwloc recorded, and devices are listed in bus id order.
TEST(RealMachines, NcclGuidSubsystemAndOrder) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  auto ib = synthetic_hca("mlx5_0", "ib0"), roce = synthetic_roce("mlx5_1", "eth2");
  ib.node_guid = "248a:0703:001e:39fe";
  roce.node_guid = "248a:0703:001e:39ff";
  ib.sys_image_guid = roce.sys_image_guid = "248a:0703:001e:39fe";
  m.numa[0].slots = {slot({ib, roce}), slot({synthetic_hca("mlx5_2", "ib1"), synthetic_gpu()}, true)};
  auto xml = to_nccl_xml(discover_machine(m, d));
  std::regex guid("name=\"(mlx5_[01])\"[^>]*guid=\"(0x[0-9a-f]+)\"");
  std::map<std::string, std::string> guids;
  for (std::sregex_iterator it(xml.begin(), xml.end(), guid), end; it != end; ++it) guids[(*it)[1]] = (*it)[2];
  ASSERT_EQ(guids.size(), 2u) << xml;
  EXPECT_EQ(guids["mlx5_0"], guids["mlx5_1"]) << xml;
  // NCCL reads sys_image_guid as a raw big-endian u64 on a little-endian host and prints it with %#lx.
  EXPECT_EQ(guids["mlx5_0"], "0xfe391e0003078a24");
  EXPECT_NE(xml.find("vendor=\"0x10b5\" device=\"0x8747\" subsystem_vendor=\"0x10b5\" subsystem_device=\"0x8747\""), std::string::npos) << xml;
  EXPECT_LT(xml.find("busid=\"0000:04:00.0\""), xml.find("busid=\"0000:05:00.0\"")) << "the HCA (04) before the GPU (05):\n" << xml;
}

// 1024 PUs in one NUMA node's neighbourhood: the affinity still fits NCCL's 255 characters and means
// the same CPUs to NCCL's parser.
TEST(RealMachines, NcclAffinityFitsOn1024PuNodes) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(8);
  for (auto& n : m.numa) n.cores = 128;
  m.numa[7].slots = {slot({synthetic_gpu(), synthetic_hca("mlx5_0", "ib0")}, true)};
  auto xml = to_nccl_xml(discover_machine(m, d));
  std::regex attr("affinity=\"([^\"]*)\"");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(xml, match, attr)) << xml;
  EXPECT_LE(match[1].length(), 255) << match[1];
  auto cpus = nccl_cpus(match[1]);
  ASSERT_EQ(cpus.size(), 128u) << match[1];
  EXPECT_EQ(cpus.front(), 896u);
  EXPECT_EQ(cpus.back(), 1023u);
}

// Without NVLink data gres.conf says nothing about links; "no NVLink" is only written when known.
TEST(RealMachines, UnknownNvlinksAreNotZeroLinks) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu(), synthetic_gpu()}, true)};
  auto gres = to_gres_conf(discover_machine(m, d));
  EXPECT_EQ(gres.find("Links="), std::string::npos) << gres;
}

// A rate that is not known is not a rate that passed.
TEST(RealMachines, UnknownRatesAreNotChecked) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu(), synthetic_hca("mlx5_0", "ib0")}, true)};
  auto t = discover_machine(m, d);
  CheckOptions o;
  o.min_rate_gbps = 200;
  auto rate = of_aspect(check_links(t, o), "rate");
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0].kind, FindingKind::unknown);
  EXPECT_NE(rate[0].problem.find("rate unknown: not checked"), std::string::npos) << rate[0].problem;
}

// Slurm's NodeName is the short host name, and a GPU Type is the family name admins write (a100),
// which Slurm's NVML autodetect matches as a substring of its own lowercased name.
TEST(RealMachines, NamesSlurmMatches) {
  TempDir d;
  SyntheticMachine m;
  m.hostname = "gpu-a07.cluster.example.org";
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu("NVIDIA A100-SXM4-80GB")})};
  auto t = discover_machine(m, d);
  auto gres = to_gres_conf(t);
  EXPECT_NE(gres.find("NodeName=gpu-a07 Name=gpu Type=a100 "), std::string::npos) << gres;
  EXPECT_EQ(to_node_features(t).rfind("NodeName=gpu-a07 Gres=gpu:a100:1 ", 0), 0u) << to_node_features(t);
}

TEST(RealMachines, DuplicateGpuBusIdIsAnError) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu()}), slot({synthetic_gpu()})};
  std::string xml = synthetic_hwloc_xml(m);
  xml = std::regex_replace(xml, std::regex("0000:02:00\\.0\" pci_type=\"0302"), "0000:01:00.0\" pci_type=\"0302");
  d.write("dup.xml", xml);
  DiscoveryOptions o;
  o.hwloc_xml = d.path() / "dup.xml";
  try {
    discover(o);
    FAIL() << "two GPUs at 0000:01:00.0 were accepted";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("0000:01:00.0"), std::string::npos) << e.what();
  }
}

TEST(RealMachines, DeviceOutsideItsBridgesBusRangeIsNamed) {
  TempDir d;
  SyntheticMachine m;
  m.numa.resize(1);
  m.numa[0].slots = {slot({synthetic_gpu()})};
  std::string xml = std::regex_replace(synthetic_hwloc_xml(m), std::regex("0000:\\[01-01\\]"), "0000:[07-07]");
  d.write("range.xml", xml);
  DiscoveryOptions o;
  o.hwloc_xml = d.path() / "range.xml";
  auto t = discover(o);
  bool named = false;
  for (const auto& n : t.notes) named = named || (n.find("0000:01:00.0") != std::string::npos && n.find("bus range") != std::string::npos);
  EXPECT_TRUE(named) << (t.notes.empty() ? "no notes" : t.notes.front());
}

TEST(RealMachines, NewerHwlocXmlSaysSo) {
  TempDir d;
  SyntheticMachine m;
  m.xml_version = "3.0";
  m.numa.resize(1);
  write_synthetic_hwloc(m, d.path() / "v3.xml");
  DiscoveryOptions o;
  o.hwloc_xml = d.path() / "v3.xml";
  try {
    discover(o);
    FAIL() << "a version 3.0 export was read";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("hwloc XML version 3.0 is newer than this hwloc (2.x) can read"), std::string::npos) << e.what();
  }
}
