#include <gtest/gtest.h>

#include "cnet/topology/emit.hpp"
#include "cnet/topology/nvml.hpp"
#include "cnet/topology/sysfs.hpp"

using namespace cnet::topology;

TEST(Vocabulary, GresTypeMatchesSlurmsNvmlNameRule) {
  EXPECT_EQ(gres_type("Tesla V100-SXM3-32GB-H"), "tesla_v100-sxm3-32gb-h");
  EXPECT_EQ(gres_type("NVIDIA A100-SXM4-80GB"), "nvidia_a100-sxm4-80gb");
  EXPECT_EQ(gres_type("odd:name,with*chars"), "odd_name_with_chars");
}

TEST(Vocabulary, MemoryClassSnapsToTheMarketedSize) {
  EXPECT_EQ(memory_class(32510ull << 20), "gpumem32g");   // V100 32 GB as NVML reports it
  EXPECT_EQ(memory_class(81559ull << 20), "gpumem80g");   // H100 80 GB
  EXPECT_EQ(memory_class(143771ull << 20), "gpumem141g"); // H200
  EXPECT_EQ(memory_class(16ull << 30), "gpumem16g");
  EXPECT_EQ(memory_class(0), "");
}

TEST(Vocabulary, RangesAndRates) {
  EXPECT_EQ(compress_ranges({5, 0, 1, 2, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(compress_ranges({}), "");
  EXPECT_EQ(parse_ib_rate("200 Gb/sec (4X HDR)"), std::make_pair(200u, 4u));
  EXPECT_EQ(parse_ib_rate("2.5 Gb/sec (1X SDR)"), std::make_pair(2u, 1u));
  EXPECT_EQ(parse_ib_rate("garbage"), std::make_pair(0u, 0u));
  EXPECT_EQ(normalise_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
}

TEST(Nvml, AbsentDriverIsReportedNotFatal) {
  NvmlReport r = query_nvml();  // no NVIDIA driver on CI machines
  if (!r.available) {
    EXPECT_NE(r.why_not, "");
  }
}
