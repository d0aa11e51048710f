#pragma once
// The host-side decisions of the GPU stage path, made before anything touches a GPU: which CUDA device a
// task computes on, the buffers a stage allocates and whether its weights and buffers fit the device's
// free memory (refused with the sizes named), and how activations travel between two stages.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cnet/inference/model.hpp"
#include "cnet/inference/safetensors.hpp"
#include "cnet/inference/schedule.hpp"

namespace cnet::inference {

// A GPU stage that cannot run as asked: the message names the stage, the sizes and the fix.
class GpuPlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// cuBLAS's workspace, fixed so its choice of kernels (and so the bits) does not follow free memory.
inline constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

// What a stage allocates for activations: three row buffers of the widest layer, two inboxes and two
// outboxes of that size (NCCL transfers overlapping compute), fc1's output, and one 16-bit copy of the
// activations for GEMMs with F16/BF16 weights.
struct GpuBuffers {
  std::size_t max_rows = 0, max_width = 0, max_hidden = 0, workspace_bytes = kCublasWorkspaceBytes;
  std::uint64_t activation_bytes() const;
};
GpuBuffers plan_buffers(const ModelSpec& model, const StageRange& stage, std::size_t micro_batch);

struct GpuStageMemory {
  std::uint64_t weights = 0, activations = 0, workspace = 0;
  std::uint64_t total() const { return weights + activations + workspace; }
};
// Weights count in their stored dtype (F16/BF16 stay 16-bit on the GPU); biases and norms as F32.
GpuStageMemory stage_memory(const SafetensorsFile& weights, const ModelSpec& model, const StageRange& stage, const GpuBuffers& buffers);

// Throws GpuPlanError when `need` exceeds `free_bytes` of the device, naming both and what to change.
void check_fits(unsigned stage_index, const StageRange& stage, const GpuStageMemory& need, const std::string& device,
                std::uint64_t free_bytes);

// The CUDA device a task uses among the `visible` it sees: Slurm's binding usually leaves one (0);
// seeing several, tasks on one node take them by local rank, wrapping when there are more tasks.
int cuda_device_for_task(int visible, unsigned local_rank);

// How a stage's output reaches the next stage: over UCX from host memory (a CPU stage on either side),
// staged through pinned host memory over UCX (GPU stages on one GPU, or NCCL not usable), or over
// NCCL device to device (GPU stages on different GPUs with NCCL loaded).
enum class ActivationPath { host, host_staged, nccl };
struct StageDevice {
  std::string host;
  std::string gpu_uuid;  // empty: the stage computes on the CPU
};
ActivationPath choose_activation_path(const StageDevice& from, const StageDevice& to, bool nccl_available);
const char* describe(ActivationPath path);

// What each rank tells the others before the stages are linked.
struct RankDevice {
  StageDevice device;
  bool nccl = false;  // NCCL loadable on that rank
};
std::string to_text(const RankDevice& d);
RankDevice rank_device_from_text(const std::string& text);  // throws GpuPlanError on damaged text

// Which of this rank's neighbours it talks to over NCCL; every rank computes the same answer from the
// same list, so the two sides of a pair agree without talking. Each NCCL pair gets a communicator of
// its own (sender rank 0, receiver rank 1): NCCL refuses two ranks of one communicator on one GPU, which
// a job-wide one would have whenever stages or replicas share a GPU elsewhere in the job.
struct StageLinks {
  bool nccl_from_prev = false, nccl_to_next = false;
  ActivationPath to_next = ActivationPath::host;  // for the banner
};
StageLinks plan_stage_links(const JobLayout& layout, const std::vector<RankDevice>& ranks, std::uint32_t rank);

// Where each stage computes, from --gpu-per-stage 1 (every stage on its task's GPU) or --stage-devices
// cpu,gpu,... (a mixed job: CPU-only nodes take the CPU stages). Empty: every stage on the CPU; one
// entry: every stage there; else one entry per stage.
std::vector<bool> parse_stage_devices(const std::string& list);  // throws GpuPlanError naming the bad entry
// Throws GpuPlanError when the list names another number of stages than the job has.
bool stage_on_gpu(const std::vector<bool>& devices, unsigned stage, unsigned stages);
bool any_gpu(const std::vector<bool>& devices);
bool mixed_devices(const std::vector<bool>& devices);  // some stages on the CPU, some on GPUs

std::string human_bytes(std::uint64_t bytes);  // "3.00 GiB", "200 MiB", "512 B"

}  // namespace cnet::inference
