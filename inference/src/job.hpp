#pragma once
// The inference job's parts, shared by the files that play its roles (inside libcnet_inference, not
// public): what a rank prepares before it computes (job.cpp), the stage runner (stage_runner.cpp), the
// data-parallel dispatcher (replica_dispatcher.cpp), the writer's intake of other ranks' rows
// (rows_from_ranks.cpp) and the run's report (job_report.cpp). inference_job.cpp runs them in order.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "cnet/inference/boundary_swing.hpp"
#include "cnet/inference/compute_trace.hpp"
#include "cnet/inference/forward.hpp"
#include "cnet/inference/gpu_stage.hpp"
#include "cnet/inference/inference_job.hpp"
#include "cnet/inference/output_sink.hpp"
#include "cnet/inference/predictions.hpp"
#include "cnet/inference/safetensors.hpp"
#include "cnet/inference/schedule.hpp"
#include "cnet/inference/swing_stage.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::inference {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline std::span<std::byte> bytes(std::vector<float>& v) { return std::as_writable_bytes(std::span(v)); }
// Activations between stages and finished rows to the writer never share a tag.
inline std::uint32_t activation_tag(std::uint32_t mb) { return 2 * mb; }
inline std::uint32_t output_tag(std::uint32_t mb) { return 2 * mb + 1; }

struct InputRows {
  std::unique_ptr<SafetensorsFile> file;
  std::vector<float> storage;
  std::shared_ptr<const float> scratch;  // decoded images: an unlinked scratch file, mapped (open_input)
  std::span<const float> data;  // empty where the rows were not decoded (images, on a later stage)
  bool file_backed = false;     // `data` is a file's mapping: the pages of rows done with can be dropped
  std::size_t rows = 0;
  std::vector<std::string> names;    // the images, one per row, in order; empty for a tensor
  std::vector<std::string> skipped;  // images left out (--skip-bad-inputs), with why
  // Rows [first, first + count) of `width` values are done with: a file-backed input's pages are
  // dropped from this process (read again from the file should they be needed), so streaming a large
  // input does not keep it all resident. Nothing happens to rows held in memory.
  void release(std::size_t first, std::size_t count, std::size_t width) const;
};

// The input is one 2-D tensor [rows, width]: named "input", or the file's only tensor; or a folder (or
// list file) of images for a model whose input is [3, crop, crop], decoded when `decode` (the ranks that
// read the rows), else only listed.
InputRows open_input(const std::string& path, const ModelSpec& model, const InputOptions& options, bool decode = true);
// Leaves out the images another rank found bad (they were listed here, not decoded).
void drop_skipped(InputRows& input, const std::vector<std::string>& skipped);
// What a resumed run must find unchanged: the input file, or every image and the preprocessing.
std::string input_identity(const InferenceOptions& o, const InputRows& input);

// Everything a rank needs before it computes, checked before any rank computes or the writer touches
// the output: the layout, the model and this rank's stage of it, the input.
struct Job {
  JobLayout layout;
  std::unique_ptr<SafetensorsFile> weights;  // a layer list's; null for a graph model
  ModelSpec model;
  std::vector<StageRange> stages;
  InputRows input;
  int gpu = -1;  // this rank's CUDA device, -1: the CPU
  NcclPairs nccl;  // before `forward`: a stage linked over them goes first
  std::unique_ptr<StageCompute> forward;
  SwingStage* swing = nullptr;        // `forward`, where a cut beside this stage swings
  std::vector<CutSwing> cuts;          // per cut (after stage k): which ways its layers may move
  ActivationPath to_next = ActivationPath::host;
  std::vector<MicroBatch> all;
};

// This rank's part of the job: the model, its stages, its input and its stage's compute. A graph's
// ranks share the seconds they timed at load first (a collective), so every rank cuts alike.
Job prepare_job(const InferenceOptions& o, transport::Bootstrap& boot);

// --resume, or --resume=auto with a progress file from an earlier run.
bool resuming(const InferenceOptions& o);
// Before the writer touches anything: an output or trace that is one of the job's files is refused.
void refuse_output_over_inputs(const InferenceOptions& o);
void refuse_trace_over_job_files(const InferenceOptions& o);

// The writer opens the output (fresh, or resumed from its progress log) and decides what is left to do;
// every rank learns that list.
std::vector<MicroBatch> plan_work(transport::Bootstrap& boot, const Job& job, const std::unique_ptr<OutputSink>& sink);

// A job with GPU stages: every rank (CPU stages too) says where it computes and whether NCCL loads
// there; neighbours on different GPUs are then linked over NCCL (device to device), the others go
// through the host.
void link_gpu_stages(transport::Bootstrap& boot, Job& job, std::chrono::milliseconds timeout);

// One message of a full micro-batch's size over each of this rank's links (the next and previous stage
// over UCX, the writer and the other replicas' last stages) before the clock starts: UCX connects and
// sets up its large-message protocol on first use, about 12 ms on one node here, which the first
// micro-batch would otherwise pay at every stage in turn, on the pipeline's critical path. Both sides
// of a link decide from the same job-wide facts, so every message is matched.
void prime_links(transport::UcxChannel& ch, const Job& job, bool receive_here, bool send_here, bool writer);

// At a swinging cut, the shares of micro-batches the stage before it took the next stage's first layer
// and gave away its own last; -1 where the cut does not swing.
struct CutShares {
  double took = -1, gave = -1;
};

// This rank's share of the work: receive (or read) each micro-batch, run its stage, send it on (or to
// the writer, or into the output). Receives are posted two ahead and sends double-buffered, so
// transfers overlap the computing; transfers also progress between layers. Returns, where the cut
// after this stage swings, the shares of micro-batches this stage took and gave a layer there.
CutShares run_stage(transport::UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo, OutputSink* sink, ComputeClock& busy);

// Data parallel with one stage per replica: the writer (rank 0) hands micro-batches out as the replicas
// ask, so a replica on a slower or busier node takes fewer and the job does not wait on the slowest one's
// fixed share. Each replica asks for its next micro-batch near the end of the one it computes, so the
// answer (given by the writer between its own layers) is there before it is needed. Returns, at the
// writer, how many micro-batches each replica computed. (With several stages per replica the split stays
// fixed: the later stages and the writer find each micro-batch by its index.)
std::vector<std::size_t> run_replicas_on_demand(transport::UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo,
                                                OutputSink* sink, ComputeClock& busy);

// What each rank did, in rank order: its computing time, and where the cut after it swings, the shares
// of micro-batches it took and gave a layer there. Also the run's last synchronisation: a sender whose
// last messages left its buffers may not exit before they are received (a peer that is gone fails
// every receive from it, delivered or not), and no rank gets past this before every rank has reached it.
struct RankSummary {
  double busy_seconds = 0;
  CutShares cut;
  std::uint64_t peak_rss_bytes = 0;  // the rank's largest resident memory so far (getrusage)
  std::uint64_t weight_bytes = 0;    // a graph's weights this rank read in (0 for a layer list, which maps its file)
};
std::vector<RankSummary> gather_summaries(transport::UcxChannel& ch, const Job& job, const ComputeClock& busy, CutShares cut);

// The banner rank 0 prints before the run: stages, hosts, what each computes, the cuts that swing.
void print_banner(const InferenceOptions& o, const Job& job, const transport::UcxChannel& ch, std::size_t todo);

// At the writer, once the output is complete: the run's summary lines (throughput, each rank's share
// computing, the cuts' moves, a --stage-layers that would even the stages out), and the same as the
// --json summary.
nlohmann::json summarize_run(const InferenceOptions& o, const Job& job, OutputSink& sink, const std::vector<MicroBatch>& todo,
                             const std::vector<RankSummary>& ranks, std::vector<std::size_t> per_replica, std::uint32_t size);

// --verify: the whole model on this process over the same micro-batches, compared with what was written:
// on the GPU the writer used when the stages ran on GPUs (bit-identical expected on the same GPU model),
// and then also against the CPU, whose error is reported and held to --verify-tolerance when one is set.
int verify_output(const InferenceOptions& o, const Job& job, double rate, bool whole_run, std::uint32_t ranks, nlohmann::json& summary);

// --output FILE.jsonl/.csv: the predictions from the complete output tensor, the images it left out in
// the summary; the tensor goes once they are written unless --output-tensor keeps it.
void write_predictions_of_run(const InferenceOptions& o, const Job& job, const PredictionOptions& predictions, nlohmann::json& summary);

// The trace is extra: the output is complete whether or not it can be written.
void write_trace(const InferenceOptions& o, const std::vector<RankTrace>& ranks);

}  // namespace cnet::inference
