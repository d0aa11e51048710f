// The host half of a GPU stage against the recording stage module: what GpuStageForward hands the
// module (the next micro-batch's rows, so an NCCL receive can be posted while this one computes), how it
// waits (progress between polls, the stall timeout for compute and for the last transfer) and what it
// says when the module fails. The module itself runs only on a GPU: tests/gpu/run.sh.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "cnet/inference/gpu_stage.hpp"
#include "cnet/inference/model.hpp"
#include "cnet/inference/safetensors.hpp"
#include "recording_stage_module.hpp"
#include "test_files.hpp"

namespace cnet::inference {
namespace {

// Before the first CudaStageModule::load() of this process, which is the one that counts.
const bool module_chosen = setenv("CNET_CUDA_STAGE_MODULE", CNET_RECORDING_STAGE_MODULE, 1) == 0;

RecordingModuleState& recorded() {
  void* h = dlopen(CNET_RECORDING_STAGE_MODULE, RTLD_NOW | RTLD_NOLOAD);
  auto get = h ? reinterpret_cast<RecordingModuleState* (*)()>(dlsym(h, "cnet_recording_state")) : nullptr;
  if (!get) throw std::runtime_error("the recording stage module is not loaded");
  return *get();
}

class GpuStageHost : public test::ScratchDir {
 protected:
  void SetUp() override {
    ASSERT_TRUE(module_chosen);
    std::string p = path("m.safetensors");
    write_example_model(p, {2, 16, 8, 4, 1});
    weights_ = std::make_unique<SafetensorsFile>(p);
    model_ = load_model(*weights_);
    cuda_ = &CudaStageModule::load();
    recorded() = RecordingModuleState{};
  }
  std::unique_ptr<GpuStageForward> stage(std::size_t micro_batch = 4) {
    return std::make_unique<GpuStageForward>(*cuda_, 0, *weights_, model_, 0, StageRange{0, model_.layers.size(), 0}, micro_batch);
  }
  std::unique_ptr<SafetensorsFile> weights_;
  ModelSpec model_;
  const CudaStageModule* cuda_ = nullptr;
};

TEST_F(GpuStageHost, TheNextMicroBatchIsAnnouncedOnceAndProgressRunsWhileItComputes) {
  auto s = stage();
  NcclComm from_prev(*cuda_, 0, NcclComm::Id{}, 1);
  s->link(&from_prev, nullptr);
  EXPECT_TRUE(recorded().linked_from_prev);
  EXPECT_TRUE(s->input_arrives_directly());
  std::vector<float> out;
  int progressed = 0;
  s->expect_next(3);
  s->forward({}, 4, out, [&] { ++progressed; });
  s->forward({}, 3, out, [&] { ++progressed; });  // nothing announced after it
  ASSERT_EQ(recorded().starts, 2u);
  EXPECT_EQ(recorded().started[0].rows, 4u);
  EXPECT_EQ(recorded().started[0].next_rows, 3u);
  EXPECT_EQ(recorded().started[1].rows, 3u);
  EXPECT_EQ(recorded().started[1].next_rows, 0u);
  EXPECT_EQ(progressed, 2 * recorded().polls_per_micro_batch);
  EXPECT_EQ(out.size(), 3u * 8);  // not linked to a next stage: the rows come back through the host
}

TEST_F(GpuStageHost, FinishWaitsForTheLastTransferAndNamesAStall) {
  auto s = stage();
  s->set_stall_timeout(std::chrono::milliseconds(50));
  s->finish({});
  EXPECT_EQ(recorded().flushes, 1u);
  recorded().flush_stalls = true;
  try {
    s->finish({});
    FAIL() << "a transfer that never ends was not reported";
  } catch (const GpuUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 0 (Recording GPU), cuBLAS: the last transfer did not finish within 50 ms"), std::string::npos)
        << e.what();
  }
}

TEST_F(GpuStageHost, AStalledMicroBatchIsAnErrorNamingTheLikelyCauses) {
  auto s = stage();
  s->set_stall_timeout(std::chrono::milliseconds(50));
  recorded().stall = true;
  std::vector<float> in(4 * 16), out;
  try {
    s->forward(in, 4, out);
    FAIL() << "a micro-batch that never ends was not reported";
  } catch (const GpuUnavailable& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("a micro-batch did not finish within 50 ms"), std::string::npos) << m;
    EXPECT_NE(m.find("an NCCL neighbour stalled or died"), std::string::npos) << m;
  }
}

TEST_F(GpuStageHost, TheModulesErrorsReachTheUserWithTheDevice) {
  auto s = stage();
  std::vector<float> in(4 * 16), out;
  std::strcpy(recorded().poll_error, "NCCL failed between stages: remote process exited");
  EXPECT_THROW(
      {
        try {
          s->forward(in, 4, out);
        } catch (const GpuUnavailable& e) {
          EXPECT_STREQ(e.what(), "GPU 0 (Recording GPU), cuBLAS: NCCL failed between stages: remote process exited");
          throw;
        }
      },
      GpuUnavailable);
  recorded().poll_error[0] = '\0';
  std::strcpy(recorded().flush_error, "a transfer between GPU stages: cudaErrorLaunchFailure");
  EXPECT_THROW(s->finish({}), GpuUnavailable);
  EXPECT_THROW(s->forward(std::vector<float>(3), 4, out), FormatError);  // a short micro-batch never reaches the module
}

TEST_F(GpuStageHost, AStageLargerThanTheGpusFreeMemoryIsRefusedBeforeUpload) {
  recorded().free_bytes = 1024;
  try {
    stage();
    FAIL() << "a stage larger than the GPU was accepted";
  } catch (const GpuPlanError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 0 (Recording GPU)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(recorded().stages_created, 0u);
}

}  // namespace
}  // namespace cnet::inference
