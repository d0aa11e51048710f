#include "cnet/transport/setting_sweep.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

using namespace cnet::transport;

TEST(SettingSweep, ParsesVariableAndValuesInOrder) {
  auto s = parse_setting_sweep("UCX_RC_TX_QUEUE_LEN=256,512,1024,2048");
  EXPECT_EQ(s.variable, "UCX_RC_TX_QUEUE_LEN");
  EXPECT_EQ(s.values, (std::vector<std::string>{"256", "512", "1024", "2048"}));
}

TEST(SettingSweep, RefusesWhatIsNotAUcxSettingWithTheFix) {
  auto message = [](const std::string& arg) {
    try {
      parse_setting_sweep(arg);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("UCX_RC_TX_QUEUE_LEN").find("VARIABLE=v1,v2"), std::string::npos);
  EXPECT_NE(message("NCCL_IB_QPS_PER_CONNECTION=1,2").find("nccl-tests"), std::string::npos);
  EXPECT_NE(message("LD_PRELOAD=/tmp/x.so").find("not a UCX setting"), std::string::npos);
  EXPECT_NE(message("ucx_tls=tcp").find("not a UCX setting"), std::string::npos);
  EXPECT_NE(message("UCX_TLS=tcp,$(reboot)").find("not a plain setting value"), std::string::npos);
  EXPECT_NE(message("UCX_TLS=").find("1 to 16 values"), std::string::npos);
  EXPECT_NE(message("UCX_TLS=tcp,tcp").find("given twice"), std::string::npos);
  EXPECT_NE(message("UCX_X=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17").find("1 to 16 values"), std::string::npos);
}

TEST(SettingSweep, ScopedSettingPutsBackWhatWasThere) {
  ::setenv("UCX_CNET_SWEEP_TEST", "before", 1);
  {
    ScopedSetting s("UCX_CNET_SWEEP_TEST", "during");
    EXPECT_STREQ(std::getenv("UCX_CNET_SWEEP_TEST"), "during");
  }
  EXPECT_STREQ(std::getenv("UCX_CNET_SWEEP_TEST"), "before");
  ::unsetenv("UCX_CNET_SWEEP_TEST");
  { ScopedSetting s("UCX_CNET_SWEEP_TEST", "during"); }
  EXPECT_EQ(std::getenv("UCX_CNET_SWEEP_TEST"), nullptr);
}

// Real UCX: its tcp transport reads UCX_TCP_TX_SEG_SIZE, so a value it cannot parse is refused up front.
TEST(SettingSweep, UcxRefusesAValueItsTransportCannotRead) {
  EXPECT_EQ(ucx_refusal("UCX_TCP_TX_SEG_SIZE", "16k"), "");
  std::string refused = ucx_refusal("UCX_TCP_TX_SEG_SIZE", "junk");
  EXPECT_NE(refused.find("UCX_TCP_TX_SEG_SIZE=junk"), std::string::npos) << refused;
  EXPECT_NE(ucx_refusal("UCX_RNDV_THRESH", "junk"), "");
  EXPECT_EQ(std::getenv("UCX_TCP_TX_SEG_SIZE"), nullptr);
}

namespace {
SweepPoint point(const std::string& value, std::vector<std::pair<double, double>> gbytes_p99) {
  SweepPoint p{value, {"p2p", 2, "tcp", {"a", "b"}, {}}};
  std::size_t bytes = 1024;
  for (auto [bw, p99] : gbytes_p99) {
    PerfRow r{bytes};
    r.bandwidth_gbytes = r.bus_gbytes = bw;
    r.latency_avg_us = r.latency_p50_us = p99 / 2;
    r.latency_p99_us = p99;
    p.report.rows.push_back(r);
    bytes *= 4;
  }
  return p;
}
}  // namespace

TEST(SettingSweep, BestIsTheLowestP99PerSizeNotTheHighestBandwidth) {
  std::vector<SweepPoint> pts = {point("256", {{9.0, 50}, {9.0, 80}}), point("1024", {{8.0, 40}, {9.5, 90}}),
                                 point("2048", {{7.0, 40}, {9.9, 85}})};
  // size 1: 1024 and 2048 tie on P99, 1024 has more bandwidth; size 2: 256 has the lowest P99
  EXPECT_EQ(best_by_p99(pts), (std::vector<std::size_t>{1, 0}));
  std::string table = sweep_table("UCX_RC_TX_QUEUE_LEN", pts);
  EXPECT_NE(table.find("# UCX_RC_TX_QUEUE_LEN"), std::string::npos) << table;
  std::size_t marks = 0;
  for (std::size_t at = table.find("<- best P99"); at != std::string::npos; at = table.find("<- best P99", at + 1)) ++marks;
  EXPECT_EQ(marks, 2u) << table;
  auto line_of = [&](const std::string& start) {
    auto at = table.find("\n  " + start + " ");
    return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(line_of("1024").find("best"), std::string::npos) << table;

  auto j = nlohmann::json::parse(sweep_json("UCX_RC_TX_QUEUE_LEN", pts));
  EXPECT_EQ(j["schema"], "cnet.perf.sweep/v1");
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_EQ(j["points"][2]["value"], "2048");
  EXPECT_EQ(j["points"][2]["report"]["results"][1]["latency_p99_us"], 85.0);
  EXPECT_EQ(j["best_by_p99"][0]["value"], "1024");
  EXPECT_EQ(j["best_by_p99"][1]["value"], "256");
  EXPECT_EQ(j["best_by_p99"][1]["bytes"], 4096);
}
