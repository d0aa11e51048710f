#include <gtest/gtest.h>

#include "cnet/transport/perf_report.hpp"

using namespace cnet::transport;

TEST(PerfReport, PercentilesByNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile({7}, 99), 7);
  EXPECT_EQ(percentile({}, 50), 0);
}

TEST(PerfReport, BusBandwidthFactorIsNcclTests) {
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(1), 0.0);
}

TEST(PerfReport, BaselineRoundTripAndRegressions) {
  PerfReport base{"p2p", 2, "tcp", {"cn1", "cn2"}, {{8, 0.01, 0.01, 10, 9, 30}, {4 << 20, 3.0, 3.0, 1000, 900, 2000}}};
  PerfReport back = report_from_json(to_json(base));
  EXPECT_EQ(to_json(back), to_json(base));
  EXPECT_TRUE(regressions(base, back, 0.1).empty());

  PerfReport now = base;
  now.rows[1].bandwidth_gbytes = 2.0;  // -33%
  now.rows[0].latency_p50_us = 9.5;    // +6%: inside 10%
  auto r = regressions(base, now, 0.1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], "4 MiB: bandwidth 2.000 GB/s vs 3.000 GB/s in the baseline (-33%)");
  now.rows[0].latency_p50_us = 12;
  EXPECT_EQ(regressions(base, now, 0.1).size(), 2u);
  now.mode = "allreduce";
  EXPECT_EQ(regressions(base, now, 0.1).front(), "baseline is a p2p run, this is allreduce: nothing comparable");
}

// One baseline format for every saver: cnet-perf writes one report, cnet-doctor --job one per pair.
TEST(PerfReport, BaselineFilesHoldReportsPerLink) {
  PerfReport a{"p2p", 2, "tcp", {"cn1", "cn2"}, {{8, 0.01, 0.01, 10, 9, 30}}};
  PerfReport b{"p2p", 2, "tcp", {"cn1", "cn3"}, {{8, 0.02, 0.02, 11, 10, 31}}};
  auto both = baseline_from_json(baseline_json({a, b}));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(to_json(both[1]), to_json(b));
  EXPECT_EQ(matching_baseline(both, b), &both[1]);
  PerfReport other{"p2p", 2, "tcp", {"cn7", "cn8"}, {}};
  EXPECT_EQ(matching_baseline(both, other), nullptr) << "two candidates, neither for these hosts";
  auto one = baseline_from_json(to_json(a));  // what older cnet-perf --save-baseline wrote
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(matching_baseline(one, other), &one[0]) << "a baseline of one report serves any link of its mode";
  other.mode = "allreduce";
  EXPECT_EQ(matching_baseline(one, other), nullptr);
}

// Text and JSON come from one list of columns: every number the table shows is a JSON field.
TEST(PerfReport, TableColumnsAreTheJsonFields) {
  PerfRow row{4096, 2.5, 2.5, 10.25, 9.5, 20.125};
  EXPECT_EQ(table_header("p2p"),
            "#         size    bandwidth    bandwidth      lat.avg      lat.p50      lat.p99\n"
            "#          (B)       (GB/s)       (Gb/s)         (us)         (us)         (us)\n");
  EXPECT_EQ(table_row("p2p", row), "          4096        2.500        20.00        10.25         9.50        20.12\n");
  EXPECT_NE(table_header("allreduce").find("algbw"), std::string::npos);
  EXPECT_NE(table_header("allreduce").find("#wrong"), std::string::npos);
  row.wrong = 0;
  EXPECT_TRUE(table_row("allreduce", row).ends_with("            0\n")) << table_row("allreduce", row);
  row.wrong = -1;
  EXPECT_TRUE(table_row("allreduce", row).ends_with("          n/a\n"));
  auto j = to_json(PerfReport{"p2p", 2, "tcp", {"a", "b"}, {{4096, 2.5, 2.5, 10.25, 9.5, 20.125}}});
  for (const char* field : {"\"bytes\": 4096", "\"bandwidth_gbytes\": 2.5", "\"bandwidth_gbits\": 20.0", "\"latency_p99_us\": 20.125"})
    EXPECT_NE(j.find(field), std::string::npos) << field << " in " << j;
}

TEST(PerfReport, DamagedBaselineIsRefused) {
  EXPECT_THROW(report_from_json("{"), std::runtime_error);
  EXPECT_THROW(report_from_json("{\"schema\":\"other\"}"), std::runtime_error);
  EXPECT_THROW(baseline_from_json("[]"), std::runtime_error);
  EXPECT_THROW(baseline_from_json("{\"schema\":\"cnet.perf.baseline/v1\",\"reports\":[{\"mode\":1}]}"), std::runtime_error);
  EXPECT_EQ(format_size(4 << 20), "4 MiB");
  EXPECT_EQ(format_size(1000), "1000 B");
}

TEST(PerfReport, PrometheusMetricsPerSizeAndPerLink) {
  PerfReport r{"p2p", 2, "tcp", {"cn1", "cn2"}, {{8, 0.001, 0.001, 5, 4, 9}, {4096, 2.5, 2.5, 10, 9, 20}}};
  std::string text = cnet::common::prometheus_text(report_metrics(r, 0, 1700000000));
  EXPECT_NE(text.find("cnet_perf_bandwidth_bytes_per_second{bytes=\"4096\",hosts=\"cn1,cn2\",mode=\"p2p\"} 2500000000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cnet_perf_latency_p99_seconds{bytes=\"8\",hosts=\"cn1,cn2\",mode=\"p2p\"} 9.0000000000000002e-06\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cnet_perf_link_bandwidth_bytes_per_second{hosts=\"cn1,cn2\",mode=\"p2p\"} 2500000000\n"), std::string::npos) << "largest size";
  EXPECT_NE(text.find("cnet_perf_link_latency_p99_seconds{hosts=\"cn1,cn2\",mode=\"p2p\"} 9.0000000000000002e-06\n"), std::string::npos) << "smallest size";
  EXPECT_NE(text.find("cnet_perf_regressions{hosts=\"cn1,cn2\",mode=\"p2p\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("cnet_perf_last_run_timestamp_seconds{hosts=\"cn1,cn2\",mode=\"p2p\"} 1700000000\n"), std::string::npos);
  // allreduce reports bus bandwidth, as nccl-tests does
  PerfReport a{"allreduce", 4, "tcp", {"cn1", "cn1", "cn2", "cn2"}, {{1024, 1.0, 1.5, 3, 3, 4}}};
  EXPECT_NE(cnet::common::prometheus_text(report_metrics(a, -1, 0)).find("cnet_perf_link_bandwidth_bytes_per_second{hosts=\"cn1,cn1,cn2,cn2\",mode=\"allreduce\"} 1500000000\n"),
            std::string::npos);
}

TEST(PerfReport, BaselineRecordsNicDriversAndNamesAChange) {
  PerfReport was{"p2p", 2, "rc", {"cn1", "cn2"}, {PerfRow{1024, 10, 10, 2, 2, 3}}};
  was.nic_drivers = {{"cn1", "mlx5_0 mlx5_core 5.8-1.0.1 firmware 16.35.2000"}, {"cn2", "mlx5_0 mlx5_core 5.8-1.0.1 firmware 16.35.2000"}};
  auto saved = baseline_from_json(baseline_json({was}));
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].nic_drivers, was.nic_drivers);
  PerfReport now = was;
  now.nic_drivers["cn2"] = "mlx5_0 mlx5_core 23.10-0.5.5 firmware 16.35.2000";
  EXPECT_EQ(driver_changes(saved[0], now),
            std::vector<std::string>{"cn2: mlx5_0 mlx5_core 5.8-1.0.1 firmware 16.35.2000 -> mlx5_0 mlx5_core 23.10-0.5.5 firmware 16.35.2000"});
  EXPECT_TRUE(driver_changes(saved[0], was).empty());
  PerfReport old_baseline = was;  // saved before drivers were recorded: nothing to compare, no false alarm
  old_baseline.nic_drivers.clear();
  EXPECT_TRUE(driver_changes(baseline_from_json(baseline_json({old_baseline}))[0], now).empty());
}

// A baseline records the driver of the device the traffic crossed, which UCX names in its lanes.
TEST(PerfReport, NetworkDeviceOfTheTransports) {
  EXPECT_EQ(network_device_of("tcp/eth0"), "eth0");
  EXPECT_EQ(network_device_of("rc_mlx5/mlx5_0:1,ud_mlx5/mlx5_0:1"), "mlx5_0:1");
  EXPECT_EQ(network_device_of("sysv/memory,cma/memory"), "");
  EXPECT_EQ(network_device_of("self"), "");
  EXPECT_EQ(network_device_of(""), "");
}
