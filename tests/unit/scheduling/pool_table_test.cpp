#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cnet/scheduling/pool_table.hpp"

using namespace cnet::scheduling;

TEST(PoolTable, GpuGresStringsAsSlurmctldReportsThem) {
  EXPECT_EQ(parse_gpu_gres("gpu:2").count, 2u);
  auto typed = parse_gpu_gres("gpu:a100:4(S:0-1),rdma:2");
  EXPECT_EQ(typed.model, "a100");
  EXPECT_EQ(typed.count, 4u);
  EXPECT_EQ(parse_gpu_gres("gpu:(null):1(IDX:0)").count, 1u);
  EXPECT_EQ(parse_gpu_gres("gpu:(null):1(IDX:0)").model, "");
  EXPECT_EQ(parse_gpu_gres("gpu:0(IDX:N/A)").count, 0u);
  EXPECT_EQ(parse_gpu_gres("gpu:a100:2(IDX:0,2),gpu:v100:1(IDX:5)").count, 3u) << "two typed entries add up";
  EXPECT_EQ(parse_gpu_gres("rdma:2").count, 0u);
  EXPECT_EQ(parse_gpu_gres("").count, 0u);
}

TEST(PoolTable, FeaturesGiveMemoryClassAndFabric) {
  EXPECT_EQ(feature_matching("a100,gpumem80g,ib200,nvlink", "gpumem"), "gpumem80g");
  EXPECT_EQ(feature_matching("a100,gpumem80g,ib200,nvlink", "fabric"), "ib200");
  EXPECT_EQ(feature_matching("roce100", "fabric"), "roce100");
  EXPECT_EQ(feature_matching("ibm,gpumem", "fabric"), "") << "'ibm' is not a fabric";
  EXPECT_EQ(feature_matching("", "gpumem"), "");
}

TEST(PoolTable, TableTotalsAndJson) {
  std::vector<PoolRow> rows = {{"n1", "mixed", "", "a100", 8, 6, "gpumem80g", "ib200", 64, 40, 512000, 0},
                               {"n2", "drained", "bad dimm", "a100", 8, 0, "gpumem80g", "ib200", 64, 0, 512000, 0}};
  std::string table = format_table(rows);
  EXPECT_NE(table.find("2 nodes: 6 of 16 GPUs in use, 10 free; 40 of 128 CPUs in use"), std::string::npos) << table;
  EXPECT_NE(table.find("bad dimm"), std::string::npos);
  auto j = nlohmann::json::parse(to_json(rows));
  EXPECT_EQ(j[0]["gpus_free"], 2);
  EXPECT_EQ(j[1]["state"], "drained");
}

TEST(PoolTable, StuckJobsAreShownWithTheNodeTheyHold) {
  std::vector<PoolRow> rows = {{"n1", "idle+comp", "", "a100", 8, 0, "gpumem80g", "ib200", 64, 0, 512000, 0},
                               {"n2", "idle", "", "a100", 8, 0, "gpumem80g", "ib200", 64, 0, 512000, 0}};
  rows[0].stuck = {"job 42 (alice) completing for 12 min"};
  std::string table = format_table(rows);
  EXPECT_NE(table.find("idle+comp"), std::string::npos) << table;
  EXPECT_NE(table.find("stuck: job 42 (alice) completing for 12 min\n"), std::string::npos) << table;
  EXPECT_NE(table.find("; 1 node held by stuck jobs\n"), std::string::npos) << table;
  auto j = nlohmann::json::parse(to_json(rows));
  EXPECT_EQ(j[0]["stuck"][0], "job 42 (alice) completing for 12 min");
  EXPECT_TRUE(j[1]["stuck"].empty());
}

// The table as gauges: per node its state, GPUs, CPUs and memory in use and in all, stuck jobs.
TEST(PoolTable, PrometheusGaugesCarryTheTable) {
  std::vector<PoolRow> rows = {{"n1", "mixed", "", "a100", 8, 6, "gpumem80g", "ib200", 64, 40, 512000, 1000},
                               {"n2", "drained", "bad dimm", "", 0, 0, "", "eth10", 64, 0, 512000, 0}};
  rows[1].stuck = {"job 7 (bob) completing for 20 min"};
  const std::string text = cnet::common::prometheus_text(pool_metrics(rows, 1700000000));
  for (const char* line : {"cnet_pool_node_state{fabric=\"ib200\",gpu_model=\"a100\",node=\"n1\",state=\"mixed\"} 1\n",
                           "cnet_pool_node_state{fabric=\"eth10\",gpu_model=\"\",node=\"n2\",state=\"drained\"} 1\n",
                           "cnet_pool_gpus{node=\"n1\"} 8\n", "cnet_pool_gpus_used{node=\"n1\"} 6\n", "cnet_pool_cpus_used{node=\"n1\"} 40\n",
                           "cnet_pool_memory_used_bytes{node=\"n1\"} 1048576000\n", "cnet_pool_stuck_jobs{node=\"n2\"} 1\n",
                           "cnet_pool_stuck_jobs{node=\"n1\"} 0\n", "cnet_pool_last_run_timestamp_seconds 1700000000\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
}
