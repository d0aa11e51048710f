#pragma once
// The GPU half of cnet-run, loaded only when asked for: CudaStageModule finds libcnet_cuda_stage.so
// (beside the tools, or CNET_CUDA_STAGE_MODULE) and through it the CUDA runtime, cuBLAS and the
// devices; GpuStageForward runs a stage's layers there with activations staged through pinned host
// memory. A node without CUDA, without a GPU or without the module gets GpuUnavailable, whose message
// says which and what to do, never a failure to start.

#include <array>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "cnet/inference/cuda_stage_abi.h"
#include "cnet/inference/forward.hpp"
#include "cnet/inference/gpu_plan.hpp"
#include "cnet/transport/bootstrap.hpp"

namespace cnet::inference {

class GpuUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CudaStageModule {
 public:
  // Loads the module once per process and checks a device is there; throws GpuUnavailable otherwise.
  static const CudaStageModule& load();
  // Where load() looks: CNET_CUDA_STAGE_MODULE, else the build's or installation's lib folder beside
  // the running tool. Empty when this cnet was built without CUDA.
  static std::string module_path();

  int device_count() const { return devices_; }
  bool nccl_available(std::string& why) const;
  cnet_cuda_device device(int index) const;  // throws GpuUnavailable
  double gemm_tflops(int device, std::size_t n) const;
  const cnet_cuda_stage_api& api() const { return *api_; }

 private:
  CudaStageModule() = default;
  const cnet_cuda_stage_api* api_ = nullptr;
  int devices_ = 0;
};

// The NCCL communicator of one linked pair of stages: the sender is rank 0, the receiver rank 1.
class NcclComm {
 public:
  using Id = std::array<unsigned char, CNET_NCCL_ID_BYTES>;
  NcclComm(const CudaStageModule& cuda, int device, const Id& id, int rank);  // blocks until the other side joins
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  void* handle() const { return comm_; }

 private:
  const CudaStageModule& cuda_;
  void* comm_ = nullptr;
};

// This rank's NCCL pairs. Collective over every rank of the job, CPU stages included: each rank posts
// the id of its pair with the next stage (or nothing), then both sides connect, each rank its pair with
// the previous stage first, so the pairs come up along the pipeline without waiting on each other.
struct NcclPairs {
  std::unique_ptr<NcclComm> from_prev, to_next;
};
NcclPairs connect_nccl_pairs(transport::Bootstrap& bootstrap, const StageLinks& links, int device);

class GpuStageForward : public StageCompute {
 public:
  // Checks the stage fits the device's free memory (GpuPlanError with the sizes), then uploads it.
  GpuStageForward(const CudaStageModule& cuda, int device, const SafetensorsFile& weights, const ModelSpec& model, unsigned stage_index,
                  const StageRange& stage, std::size_t micro_batch);
  ~GpuStageForward() override;
  GpuStageForward(const GpuStageForward&) = delete;
  GpuStageForward& operator=(const GpuStageForward&) = delete;

  std::size_t input_width() const override { return in_; }
  std::size_t output_width() const override { return out_; }
  void forward(std::span<const float> in, std::size_t rows, std::vector<float>& out, const std::function<void()>& progress = {}) override;
  std::string device() const override;
  std::string uuid() const { return info_.uuid; }
  // From now on: input over from_prev, output over to_next, device to device (null: through the host).
  void link(NcclComm* from_prev, NcclComm* to_next);
  bool input_arrives_directly() const override { return from_prev_; }
  bool output_leaves_directly() const override { return to_next_; }
  void expect_next(std::size_t rows) override { next_rows_ = rows; }
  void finish(const std::function<void()>& progress) override;
  // A micro-batch that has not finished after this long (a neighbour stalled or died) is an error.
  void set_stall_timeout(std::chrono::milliseconds timeout) { stall_timeout_ = timeout; }

 private:
  // Polls `done` (the module's 1 done / 0 not yet / -1 failed) under the stall timeout.
  void wait_for(int (*done)(void*, char*, std::size_t), const char* what, const std::function<void()>& progress);

  const CudaStageModule& cuda_;
  int index_;
  cnet_cuda_device info_{};
  void* stage_ = nullptr;
  std::size_t in_ = 0, out_ = 0;
  bool from_prev_ = false, to_next_ = false;
  std::size_t next_rows_ = 0;
  std::chrono::milliseconds stall_timeout_{std::chrono::minutes(2)};
};

// Where a stage computes: the CPU, or GPU `cuda_device` (of those this task sees).
struct ComputeDevice {
  bool gpu = false;
  int cuda_device = 0;
};
std::unique_ptr<StageCompute> open_stage(const ComputeDevice& where, const SafetensorsFile* weights, const ModelSpec& model,
                                         unsigned stage_index, const StageRange& stage, std::size_t micro_batch);

}  // namespace cnet::inference
