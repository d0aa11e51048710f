#include <gtest/gtest.h>

#include "cnet/topology/features.hpp"
#include "cnet/topology/nvml.hpp"
#include "cnet/topology/sysfs.hpp"

using namespace cnet::topology;

// Slurm's NVML autodetect names a GPU by its NVML name lowercased with spaces as '_' and accepts a
// configured Type that is a substring of that (gres_gpu.c); the type is the family admins write.
TEST(Features, GresTypeIsTheFamilySlurmsNvmlNameContains) {
  const std::pair<const char*, const char*> cases[] = {
      {"Tesla V100-SXM3-32GB-H", "v100"}, {"NVIDIA A100-SXM4-80GB", "a100"},     {"NVIDIA A100 80GB PCIe", "a100"},
      {"NVIDIA H100 80GB HBM3", "h100"},  {"NVIDIA GH200 480GB", "gh200"},       {"NVIDIA H200", "h200"},
      {"NVIDIA L40S", "l40s"},            {"NVIDIA RTX A6000", "rtx_a6000"},     {"NVIDIA GeForce RTX 4090", "rtx_4090"},
      {"Tesla K40m", "k40m"},             {"AMD Instinct MI250X", "mi250x"},    {"Tesla M2075 Dual-Slot Computing Processor Module", "m2075"}};
  for (const auto& [model, type] : cases) {
    EXPECT_EQ(gres_type(model), type) << model;
    std::string nvml = model;
    for (auto& c : nvml) c = c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_NE(nvml.find(gres_type(model)), std::string::npos) << model << ": Slurm's autodetect would not match " << gres_type(model);
  }
  EXPECT_EQ(gres_type("NVIDIA 20b0"), "nvidia_20b0") << "no model name: the PCI-id form";
  EXPECT_EQ(gres_type("odd:name,with*chars"), "odd");
  EXPECT_EQ(gres_type("NVIDIA"), "nvidia");
}

TEST(Features, MemoryClassSnapsToTheMarketedSize) {
  EXPECT_EQ(memory_class(32510ull << 20), "gpumem32g");   // V100 32 GB as NVML reports it
  EXPECT_EQ(memory_class(81559ull << 20), "gpumem80g");   // H100 80 GB
  EXPECT_EQ(memory_class(143771ull << 20), "gpumem141g"); // H200
  EXPECT_EQ(memory_class(16ull << 30), "gpumem16g");
  EXPECT_EQ(memory_class(0), "");
}

TEST(Features, ClassesAndFabricsReadBackAsWritten) {
  for (unsigned gb : gpu_memory_classes_gb()) EXPECT_EQ(parse_memory_class(memory_class_feature(gb)), gb);
  EXPECT_EQ(parse_memory_class("gpumem80g"), 80u);
  for (const char* bad : {"gpumem", "gpumemg", "gpumem80", "gpumemxg", "gpumem-1g", "mem80g"}) EXPECT_FALSE(parse_memory_class(bad)) << bad;
  for (NicKind k : {NicKind::ib, NicKind::roce, NicKind::eth})
    for (unsigned r : fabric_rates_gbps(k)) {
      auto f = parse_fabric_feature(fabric_feature(k, r));
      ASSERT_TRUE(f);
      EXPECT_EQ(f->kind, k);
      EXPECT_EQ(f->rate_gbps, r);
    }
  EXPECT_EQ(fabric_feature(NicKind::ib, 0), "ib") << "rate unknown";
  EXPECT_FALSE(parse_fabric_feature("ib"));
  EXPECT_FALSE(parse_fabric_feature("nvlink"));
}

TEST(Features, SysfsRates) {
  EXPECT_EQ(parse_ib_rate("200 Gb/sec (4X HDR)"), std::make_pair(200u, 4u));
  EXPECT_EQ(parse_ib_rate("2.5 Gb/sec (1X SDR)"), std::make_pair(2u, 1u));
  EXPECT_EQ(parse_ib_rate("garbage"), std::make_pair(0u, 0u));
  // A damaged sysfs file with more digits than any rate: unknown, not an uncaught std::out_of_range.
  EXPECT_EQ(parse_ib_rate("1111111111111111111100 Gb/sec (x11"), std::make_pair(0u, 0u));
  EXPECT_EQ(parse_ib_rate("200 Gb/sec (99999999999999999999X HDR)"), std::make_pair(200u, 0u));
  EXPECT_EQ(normalise_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
}

TEST(Nvml, AbsentDriverIsReportedNotFatal) {
  NvmlReport r = query_nvml();  // no NVIDIA driver on CI machines
  if (!r.available) {
    EXPECT_NE(r.why_not, "");
  }
}
