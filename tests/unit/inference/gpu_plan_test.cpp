// The GPU stage path's host-side decisions, checked without a GPU: buffer sizes, memory per stage (16-bit
// weights counted as stored), the refusal of a stage that does not fit, the device a task takes, and
// which path activations take between two stages.
#include "cnet/inference/gpu_plan.hpp"

#include <gtest/gtest.h>

#include "cnet/inference/gpu_stage.hpp"
#include "test_files.hpp"

using namespace cnet::inference;
using GpuPlan = cnet::inference::test::ScratchDir;

TEST_F(GpuPlan, BuffersFollowTheWidestLayerAndTheMicroBatch) {
  std::string p = path("m.safetensors");
  write_example_model(p, {3, 16, 8, 4, 1});  // 3 blocks 16 -> 64 -> 16, norm, head 16 -> 8
  SafetensorsFile f(p);
  ModelSpec m = load_model(f);
  GpuBuffers b = plan_buffers(m, {0, m.layers.size(), 0}, 32);
  EXPECT_EQ(b.max_rows, 32u);
  EXPECT_EQ(b.max_width, 16u);
  EXPECT_EQ(b.max_hidden, 64u);
  EXPECT_EQ(b.activation_bytes(), 32u * 16 * 4 * (3 + 4) + 32u * 64 * 4 + 32u * 64 * 2);
  GpuBuffers head = plan_buffers(m, {4, 5, 0}, 8);  // the head alone has no MLP
  EXPECT_EQ(head.max_hidden, 0u);
  EXPECT_EQ(head.max_width, 16u);
}

TEST_F(GpuPlan, WholeModelWeightsAreEveryTensorInTheFile) {
  std::string p = path("m.safetensors");
  write_example_model(p, {3, 16, 8, 4, 1});
  SafetensorsFile f(p);
  ModelSpec m = load_model(f);
  std::uint64_t in_file = 0;
  for (const auto& [name, t] : f.tensors()) in_file += t.end - t.begin;
  StageRange whole{0, m.layers.size(), 0};
  GpuStageMemory need = stage_memory(f, m, whole, plan_buffers(m, whole, 8));
  EXPECT_EQ(need.weights, in_file);
  EXPECT_EQ(need.workspace, kCublasWorkspaceBytes);
  // Two stages share the weights out between them.
  StageRange first{0, 2, 0}, second{2, m.layers.size(), 0};
  EXPECT_EQ(stage_memory(f, m, first, plan_buffers(m, first, 8)).weights + stage_memory(f, m, second, plan_buffers(m, second, 8)).weights,
            in_file);
}

TEST_F(GpuPlan, SixteenBitWeightsStaySixteenBit) {
  // linear 16 -> 32 with F16 weights and an F16 bias (biases are uploaded as F32).
  std::string header = R"({"__metadata__":{"cnet.layers":"[{\"type\":\"linear\",\"weight\":\"w\",\"bias\":\"b\"}]"},)"
                       R"("w":{"dtype":"F16","shape":[32,16],"data_offsets":[0,1024]},)"
                       R"("b":{"dtype":"F16","shape":[32],"data_offsets":[1024,1088]}})";
  std::string p = raw_file("half.safetensors", header, 1088);
  SafetensorsFile f(p);
  ModelSpec m = load_model(f);
  StageRange whole{0, 1, 0};
  EXPECT_EQ(stage_memory(f, m, whole, plan_buffers(m, whole, 4)).weights, 32u * 16 * 2 + 32u * 4);
}

TEST(GpuPlanFit, AStageThatDoesNotFitIsRefusedWithTheSizes) {
  GpuStageMemory need{std::uint64_t{3} << 30, std::uint64_t{200} << 20, kCublasWorkspaceBytes};
  EXPECT_NO_THROW(check_fits(1, {4, 8, 0}, need, "GPU 0 (NVIDIA H200)", need.total()));
  try {
    check_fits(1, {4, 8, 0}, need, "GPU 0 (NVIDIA H200)", std::uint64_t{2} << 30);
    FAIL() << "a stage larger than the free memory was accepted";
  } catch (const GpuPlanError& e) {
    std::string m = e.what();
    for (const char* part : {"stage 1 (layers 4-7)", "needs 3.23 GiB", "weights 3.00 GiB", "activations 200 MiB", "workspace 32 MiB",
                             "GPU 0 (NVIDIA H200) has 2.00 GiB free", "--num-stages", "--micro-batch"})
      EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
  }
}

TEST(GpuPlanDevice, TasksTakeTheirBoundGpuOrTheOneOfTheirLocalRank) {
  EXPECT_EQ(cuda_device_for_task(1, 0), 0);  // Slurm bound one GPU to the task
  EXPECT_EQ(cuda_device_for_task(1, 3), 0);
  EXPECT_EQ(cuda_device_for_task(4, 2), 2);  // the task sees the node's four
  EXPECT_EQ(cuda_device_for_task(4, 5), 1);  // more tasks than GPUs: they share, wrapping
  EXPECT_THROW(cuda_device_for_task(0, 0), GpuPlanError);
}

TEST(GpuPlanPath, ActivationsTakeNcclOnlyBetweenDifferentGpus) {
  StageDevice cpu{"cn1", ""}, gpu_a{"cn1", "GPU-a"}, gpu_b{"cn1", "GPU-b"}, remote{"cn2", "GPU-c"};
  EXPECT_EQ(choose_activation_path(cpu, gpu_a, true), ActivationPath::host);
  EXPECT_EQ(choose_activation_path(gpu_a, cpu, true), ActivationPath::host);
  EXPECT_EQ(choose_activation_path(gpu_a, gpu_a, true), ActivationPath::host_staged);  // NCCL cannot pair a GPU with itself
  EXPECT_EQ(choose_activation_path(gpu_a, gpu_b, true), ActivationPath::nccl);
  EXPECT_EQ(choose_activation_path(gpu_a, remote, true), ActivationPath::nccl);
  EXPECT_EQ(choose_activation_path(gpu_a, remote, false), ActivationPath::host_staged);  // NCCL missing at run time
}

TEST(GpuPlanBytes, HumanSizes) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(std::uint64_t{200} << 20), "200 MiB");
  EXPECT_EQ(human_bytes(std::uint64_t{3} << 30), "3.00 GiB");
}

// Without a GPU (CI) the module either is not built, or loads and finds no device: either way one
// message that says so and how to go on, never a crash.
TEST(GpuStageModule, NoGpuHereIsAClearError) {
  try {
    CudaStageModule::load();
    GTEST_SKIP() << "a CUDA device is present: tests/gpu/run.sh checks this path";
  } catch (const GpuUnavailable& e) {
    std::string m = e.what();
    EXPECT_TRUE(m.find("no CUDA device found") != std::string::npos || m.find("built without CUDA") != std::string::npos ||
                m.find("cannot load the CUDA stage module") != std::string::npos)
        << m;
    EXPECT_NE(m.find("--gpu-per-stage 0"), std::string::npos) << m;
  }
}

TEST(GpuPlanLinks, NeighboursOnDifferentGpusAreLinkedOverNccl) {
  // 2 replicas x 2 stages: replica 0 on two GPUs of cn1, replica 1 sharing one GPU of cn2.
  JobLayout layout{2, 2};
  std::vector<RankDevice> ranks{{{"cn1", "GPU-a"}, true}, {{"cn1", "GPU-b"}, true}, {{"cn2", "GPU-c"}, true}, {{"cn2", "GPU-c"}, true}};
  StageLinks first = plan_stage_links(layout, ranks, 0), second = plan_stage_links(layout, ranks, 1);
  EXPECT_FALSE(first.nccl_from_prev);
  EXPECT_TRUE(first.nccl_to_next);
  EXPECT_EQ(first.to_next, ActivationPath::nccl);
  EXPECT_TRUE(second.nccl_from_prev);
  EXPECT_FALSE(second.nccl_to_next);  // the last stage hands its rows to the writer through the host
  // Replica 1's stages share a GPU: host-staged, and in no NCCL pair (NCCL refuses two ranks of one
  // communicator on one GPU).
  StageLinks shared = plan_stage_links(layout, ranks, 2);
  EXPECT_FALSE(shared.nccl_to_next);
  EXPECT_EQ(shared.to_next, ActivationPath::host_staged);
  EXPECT_FALSE(plan_stage_links(layout, ranks, 3).nccl_from_prev);
  // One rank without NCCL: its pair is host-staged on both sides.
  ranks[1].nccl = false;
  EXPECT_FALSE(plan_stage_links(layout, ranks, 0).nccl_to_next);
  EXPECT_EQ(plan_stage_links(layout, ranks, 0).to_next, ActivationPath::host_staged);
  EXPECT_FALSE(plan_stage_links(layout, ranks, 1).nccl_from_prev);
}

TEST(GpuPlanLinks, StagesSharingAGpuAcrossTheJobStillPairOverNccl) {
  // Stages 0 and 2 on GPU a, stage 1 on GPU b: both pairs are NCCL pairs, each its own communicator,
  // so no communicator ever holds GPU a twice.
  JobLayout layout{3, 1};
  std::vector<RankDevice> ranks{{{"cn1", "GPU-a"}, true}, {{"cn1", "GPU-b"}, true}, {{"cn1", "GPU-a"}, true}};
  EXPECT_TRUE(plan_stage_links(layout, ranks, 0).nccl_to_next);
  StageLinks middle = plan_stage_links(layout, ranks, 1);
  EXPECT_TRUE(middle.nccl_from_prev);
  EXPECT_TRUE(middle.nccl_to_next);
  EXPECT_TRUE(plan_stage_links(layout, ranks, 2).nccl_from_prev);
}

TEST(GpuPlanLinks, CpuStagesInAGpuJobGoThroughTheHost) {
  // cpu, gpu, gpu: the CPU stage's pair is plain host memory; the two GPU stages pair over NCCL.
  JobLayout layout{3, 1};
  std::vector<RankDevice> ranks{{{"cn1", ""}, false}, {{"cn2", "GPU-a"}, true}, {{"cn3", "GPU-b"}, true}};
  StageLinks cpu = plan_stage_links(layout, ranks, 0), gpu = plan_stage_links(layout, ranks, 1);
  EXPECT_EQ(cpu.to_next, ActivationPath::host);
  EXPECT_FALSE(cpu.nccl_to_next);
  EXPECT_FALSE(gpu.nccl_from_prev);
  EXPECT_TRUE(gpu.nccl_to_next);
  EXPECT_EQ(gpu.to_next, ActivationPath::nccl);
}

TEST(GpuPlanStageDevices, ParsedPerStageAndCheckedAgainstTheStages) {
  EXPECT_EQ(parse_stage_devices("cpu,gpu,gpu"), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(parse_stage_devices("gpu"), (std::vector<bool>{true}));
  for (const char* bad : {"", "cpu,", "gpu,tpu", "GPU", "cpu,,gpu"}) {
    try {
      parse_stage_devices(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const GpuPlanError& e) {
      EXPECT_NE(std::string(e.what()).find("neither cpu nor gpu"), std::string::npos) << e.what();
    }
  }
  std::vector<bool> mixed{false, true};
  EXPECT_FALSE(stage_on_gpu(mixed, 0, 2));
  EXPECT_TRUE(stage_on_gpu(mixed, 1, 2));
  EXPECT_TRUE(stage_on_gpu({true}, 3, 4));  // one entry: every stage
  EXPECT_FALSE(stage_on_gpu({}, 0, 2));     // none: the CPU
  try {
    stage_on_gpu(mixed, 0, 3);
    ADD_FAILURE() << "2 devices for 3 stages accepted";
  } catch (const GpuPlanError& e) {
    EXPECT_NE(std::string(e.what()).find("names 2 stages but the job has 3"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(mixed_devices(mixed));
  EXPECT_FALSE(mixed_devices({true, true}));
  EXPECT_FALSE(mixed_devices({false}));
  EXPECT_TRUE(any_gpu(mixed));
  EXPECT_FALSE(any_gpu({}));
}

TEST(GpuPlanLinks, DeviceDescriptionsRoundTripAndDamageIsRefused) {
  RankDevice d{{"cn7", "GPU-0f1e2d3c-0000-1111-2222-333344445555"}, true};
  RankDevice back = rank_device_from_text(to_text(d));
  EXPECT_EQ(back.device.host, "cn7");
  EXPECT_EQ(back.device.gpu_uuid, d.device.gpu_uuid);
  EXPECT_TRUE(back.nccl);
  EXPECT_FALSE(rank_device_from_text(to_text({{"cn1", ""}, false})).nccl);
  EXPECT_THROW(rank_device_from_text("cn1 only"), GpuPlanError);
}
