#pragma once
// One inference job across the ranks of a Bootstrap: pipeline stages, data-parallel replicas, or both.
// Stage 0 of each replica reads its micro-batches from the input file, activations flow stage to stage
// over UcxChannel (receives posted ahead, sends double-buffered, transfers progressing between layers),
// the last stages hand their rows to the writer (last stage of replica 0), which writes them in input
// order into a preallocated safetensors file and records each synced micro-batch in OUTPUT.progress.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "cnet/inference/images.hpp"
#include "cnet/inference/schedule.hpp"
#include "cnet/transport/bootstrap.hpp"

namespace cnet::inference {

// How --input is read when it names images (a folder or a list file).
struct InputOptions {
  ImagePreprocess images;
  bool skip_bad = false;  // --skip-bad-inputs: a file that is no image is left out and listed, not fatal
};

struct InferenceOptions {
  std::string name;  // --name: in progress lines and the summary
  // What every line of the run starts with: "cnet-run" alone, or "cnet-run NAME" with --name.
  std::string label() const { return name.empty() ? "cnet-run" : "cnet-run " + name; }
  std::string model, input, output;
  InputOptions inputs;
  // With predictions as the output (.jsonl/.csv): where the raw output tensor goes (empty: a temporary
  // OUTPUT.logits.safetensors, removed once the predictions are written), the classes per input, the
  // names of the classes.
  std::string output_tensor;
  std::size_t top_k = 5;
  std::string labels;
  // Where the output tensor is written, resumed from and verified.
  std::string tensor_output() const;
  Scheme scheme = Scheme::pipeline;
  unsigned num_stages = 0;  // 0: as the scheme implies
  std::vector<std::size_t> stage_layers;  // layers per stage, in order; empty: balanced by estimated cost
  // Where two CPU stages meet, the layer at the cut goes to whichever keeps them even, micro-batch by
  // micro-batch (boundary_swing.hpp); false (--fixed-split): every layer stays on its planned stage.
  bool swing_cuts = true;
  std::size_t micro_batch = 8;
  int blas_threads = 1;
  // Where stages compute (gpu_plan.hpp's stage_on_gpu): empty: every stage on the CPU; one entry: every
  // stage there (true: on its task's GPU, cuBLAS); else one entry per stage, CPU and GPU stages mixed.
  std::vector<bool> stage_devices;
  // --resume: go on from OUTPUT.progress (it must exist). --resume=auto: the same when it exists, a
  // fresh start when it does not, so one sbatch --requeue script serves the first run and every rerun.
  enum class Resume { no, yes, automatic } resume = Resume::no;
  bool verify = false;
  double verify_tolerance = 0;  // 0: bit-identical required; else the largest relative error allowed
  bool json = false;            // the writer prints a JSON summary at the end
  std::string trace;            // the writer writes every rank's compute spans here (Chrome trace JSON)
  bool detect_peer_failure = true;
  std::chrono::seconds timeout{120};  // one transfer; a stage silent for longer is reported as hung
};

// Exit codes of cnet-run.
enum ExitCode { kOk = 0, kVerifyMismatch = 1, kBadInput = 2, kStageFailure = 3 };

// Runs this rank's part. Every failure ends the whole job (Bootstrap::abort) with a message naming the
// stage, rank and host; returns the exit code otherwise.
int run_inference(transport::Bootstrap& bootstrap, const InferenceOptions& options);

// The whole model on this one process over the same micro-batches: what --verify compares with. On
// the GPU when `gpu_device` >= 0 (that CUDA device), else the CPU.
struct SingleProcessResult {
  std::vector<float> output;
  double seconds = 0;
};
SingleProcessResult run_single_process(const std::string& model, const std::string& input, std::size_t micro_batch, int gpu_device = -1,
                                       const InputOptions& inputs = {});

// The CUDA device a task with this node-local rank uses (of those it sees); throws GpuUnavailable with
// one line saying why there is none (no CUDA built in, runtime missing, no device).
int gpu_for_task(unsigned local_rank);

}  // namespace cnet::inference
