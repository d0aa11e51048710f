#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

#include "cnet/topology/discover.hpp"
#include "cnet/topology/emit.hpp"
#include "cnet/topology/paths.hpp"
#include "test_support.hpp"

using namespace cnet::topology;
using cnet::topology::testing::fixture;

namespace {
const auto load = cnet::topology::testing::load_fixture;
}  // namespace

TEST(GresConf, GpuAndRdmaLines) {
  std::string gres = to_gres_conf(load("32em64t-2n8c2t-pci-wholeio.xml"));
  // No NVLink data in this export: no Links= (a 0 would say "no NVLink" to Slurm).
  EXPECT_NE(gres.find("NodeName=conan Name=gpu Type=k40m File=/dev/nvidia2 Cores=8-15\n"), std::string::npos) << gres;
  EXPECT_NE(gres.find("NodeName=conan Name=rdma Type=mlx5_0 File=/dev/infiniband/uverbs0 Cores=8-15\n"), std::string::npos)
      << gres;
}

TEST(GresConf, LinksCountDirectNvlinksOnly) {
  std::string gres = to_gres_conf(load("power8gpudistances.xml"));
  EXPECT_NE(gres.find("File=/dev/nvidia0 Cores=0-3 Links=-1,2,0,0\n"), std::string::npos) << gres;
  // Behind NVSwitches Slurm's own NVML detection reports 0 direct links; so must we, or slurmd drains.
  std::string dgx = to_gres_conf(load("nvidiaDGX2.xml"));
  EXPECT_NE(dgx.find("Links=-1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n"), std::string::npos) << dgx;
}

TEST(NodeFeatures, ModelMemoryFabricAndNvlink) {
  EXPECT_EQ(to_node_features(load("nvidiaDGX2.xml")),
            "NodeName=NODE Gres=gpu:v100:16 Features=gpumem32g,nvlink,v100\n");
  EXPECT_EQ(to_node_features(load("32em64t-2n8c2t-pci-wholeio.xml")),
            "NodeName=conan Gres=gpu:k40m:1,gpu:m2075:2,rdma:mlx5_0:1 Features=gpumem12g,ib,k40m,m2075\n");
}

TEST(NcclXml, SwitchNestingAffinityAndNvlinks) {
  std::string xml = to_nccl_xml(load("nvidiaDGX2.xml"));
  EXPECT_EQ(xml.rfind("<system version=\"1\">", 0), 0u);
  // GPU 34:00.0 sits under PLX 32:00.0 which sits under PLX 2c:00.0, under NUMA node 0.
  std::regex nesting(
      "<cpu numaid=\"0\"[^>]*>\\s*<pci busid=\"0000:2c:00.0\" class=\"0x060400\"[^>]*>\\s*"
      "<pci busid=\"0000:32:00.0\"[^>]*>\\s*<pci busid=\"0000:34:00.0\" class=\"0x030200\"[^>]*>\\s*"
      "<gpu dev=\"0\" sm=\"70\" rank=\"0\">");
  EXPECT_TRUE(std::regex_search(xml, nesting)) << xml.substr(0, 1200);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(xml, m, std::regex("affinity=\"([^\"]*)\"")));
  EXPECT_TRUE(std::regex_match(m[1].str(), std::regex("[0-9a-f]{1,8}(,[0-9a-f]{1,8})*"))) << m[1];
  EXPECT_NE(xml.find("<nvlink target=\"0000:66:00.0\" count=\"1\" tclass=\"0x068000\"/>"), std::string::npos);
  EXPECT_EQ(xml.find("0000:3B"), std::string::npos) << "bus ids must be lowercase";
}

TEST(NcclXml, NicsCarryNameSpeedAndGuid) {
  std::string xml = to_nccl_xml(load("32em64t-2n8c2t-pci-wholeio.xml"));
  // guid: the SysImageGUID 248a:0703:001e:39fe as NCCL prints it; no gdr, as nothing showed GPUDirect RDMA.
  EXPECT_NE(xml.find("<net name=\"mlx5_0\" dev=\"0\" port=\"1\" guid=\"0xfe391e0003078a24\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<cpu numaid=\"1\" affinity=\"ff00ff00\""), std::string::npos) << xml;
}

TEST(Json, StableVersionedSchema) {
  auto j = nlohmann::json::parse(to_json(load("32em64t-2n8c2t-pci-wholeio.xml")));
  EXPECT_EQ(j["schema"], kJsonSchema);
  EXPECT_EQ(j["gpus"].size(), 3u);
  EXPECT_EQ(j["gpus"][2]["locality"]["numa_node"], 1);
  EXPECT_EQ(j["paths"]["gpu_gpu"][1][2], "PHB");
  EXPECT_EQ(j["pairing"][2]["nic"], "mlx5_0");
  EXPECT_EQ(j["pairing"][2]["path"], "PIX");
  EXPECT_EQ(j["nics"][0]["kind"], "ib");
}

TEST(Matrix, LooksLikeNvidiaSmi) {
  std::string m = to_matrix(load("32em64t-2n8c2t-pci-wholeio.xml"));
  EXPECT_NE(m.find("GPU2    SYS     PHB     X       PIX"), std::string::npos) << m;
  EXPECT_NE(m.find("NIC0: mlx5_0 (ib, rate unknown, ACTIVE, 0000:04:00.0)"), std::string::npos) << m;
  EXPECT_NE(m.find("GPU2 -> mlx5_0 (PIX)"), std::string::npos) << m;
}

// The slurmd-side cache is JSON read back in every job step: everything must survive the round trip.
TEST(Json, RoundTripsEveryFixture) {
  for (const auto& entry : std::filesystem::directory_iterator(fixture("hwloc"))) {
    NodeTopology t = load(entry.path().filename());
    NodeTopology back = from_json(to_json(t));
    EXPECT_EQ(to_json(back), to_json(t)) << entry.path();
    EXPECT_EQ(to_nccl_xml(back), to_nccl_xml(t)) << entry.path();
    EXPECT_EQ(to_gres_conf(back), to_gres_conf(t)) << entry.path();
    EXPECT_EQ(to_matrix(back), to_matrix(t)) << entry.path();
  }
}

// The slurmd-side cache is read by every step: a GPU index that is not its position (a hand edit, a
// forged file) would index past the GPU list in pairing and checks.
TEST(Json, GpuIndexesMustBeTheirPositions) {
  auto t = cnet::topology::testing::load_fixture("32em64t-2n8c2t-pci-wholeio.xml");
  ASSERT_GE(t.gpus.size(), 2u);
  t.gpus[1].index = 7;
  try {
    from_json(to_json(t));
    FAIL() << "accepted a GPU index that is not its position";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 1 says it is index 7"), std::string::npos) << e.what();
  }
}

TEST(Json, NumbersOutOfRangeAreRefused) {
  // A float where a whole number or a small float belongs was converted out of range, undefined
  // behaviour (found by fuzzing): refused, naming the number.
  auto t = cnet::topology::testing::load_fixture("32em64t-2n8c2t-pci-wholeio.xml");
  ASSERT_FALSE(t.gpus.empty());
  t.gpus[0].memory_bytes = 34089205760;
  const std::string good = to_json(t);
  for (const std::string bad : {"3.4e85", "-1.5", "1e300"}) {
    std::string text = good;
    text.replace(text.find("34089205760"), 11, bad);
    try {
      from_json(text);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const TopologyError& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
}

TEST(Json, DamagedDocumentsAreRefusedWithAReason) {
  for (std::string bad : {"", "{", "[]", "{\"schema\":\"other/v9\"}", "{\"schema\":\"cnet.topology/v1\"}"}) {
    try {
      from_json(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const TopologyError& e) {
      EXPECT_NE(std::string(e.what()).find("topology JSON"), std::string::npos) << e.what();
    }
  }
}

// The picture's graph: every GPU and NIC, the pairing cnet chose with its path class, a DOWN port
// marked, unknowns shown as '?', labels that Graphviz reads whatever sysfs said.
TEST(Dot, EveryDeviceThePairingAndDownPorts) {
  NodeTopology dgx = load("nvidiaDGX2.xml");
  std::string dot = to_dot(dgx);
  for (const auto& g : dgx.gpus) EXPECT_NE(dot.find("gpu" + std::to_string(g.index) + " [label=\"GPU" + std::to_string(g.index) + "\\n"), std::string::npos) << g.index;
  EXPECT_NE(dot.find("nvswitch [label=\"NVSwitch x"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_package_0"), std::string::npos);
  EXPECT_NE(dot.find("subgraph cluster_package_1"), std::string::npos);

  NodeTopology node = load("32em64t-2n8c2t-pci-wholeio.xml");
  ASSERT_FALSE(node.nics.empty());
  ASSERT_FALSE(node.gpus.empty());
  dot = to_dot(node);
  for (const auto& p : pair_gpus_with_nics(node)) {
    if (p.nic < 0) continue;
    EXPECT_NE(dot.find("gpu" + std::to_string(p.gpu) + " -- nic" + std::to_string(p.nic) + " [style=dashed"), std::string::npos) << p.gpu;
  }
  EXPECT_EQ(dot.find("not usable"), std::string::npos);

  node.nics[0].state = "DOWN";
  node.nics[0].mtu = 0;
  node.gpus[0].model = "K40m \"rev\\2\"\n\xff";
  dot = to_dot(node);
  EXPECT_NE(dot.find("DOWN (not usable)\", fillcolor=\"#f4c7c3\", color=\"#cc0000\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("MTU ?"), std::string::npos);
  EXPECT_NE(dot.find("K40m \\\"rev\\\\2\\\"\\n?"), std::string::npos) << "quotes, backslashes, newlines and non-ASCII made safe";
}
