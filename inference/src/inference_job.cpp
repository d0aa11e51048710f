#include "cnet/inference/inference_job.hpp"

#include <cstdio>
#include <optional>

#include "cnet/common/text.hpp"
#include "cnet/inference/predictions.hpp"
#include "job.hpp"

namespace cnet::inference {

int gpu_for_task(unsigned local_rank) { return cuda_device_for_task(CudaStageModule::load().device_count(), local_rank); }

std::string InferenceOptions::tensor_output() const {
  if (!writes_predictions(output)) return output;
  return output_tensor.empty() ? output + ".logits.safetensors" : output_tensor;
}

SingleProcessResult run_single_process(const std::string& model_path, const std::string& input_path, std::size_t micro_batch,
                                       int gpu_device, const InputOptions& inputs) {
  LoadedModel loaded = open_model(model_path);
  const ModelSpec& model = loaded.spec;
  InputRows input = open_input(input_path, model, inputs);
  StageRange whole{0, model.layers.size(), 0};
  auto forward = open_stage(ComputeDevice{gpu_device >= 0, gpu_device}, loaded.weights.get(), model, 0, whole, micro_batch);
  SingleProcessResult r;
  r.output.resize(input.rows * model.output_width());
  std::vector<float> out;
  auto t0 = Clock::now();
  for (const MicroBatch& mb : micro_batches(input.rows, micro_batch)) {
    forward->forward(input.data.subspan(mb.first_row * model.input_width(), mb.rows * model.input_width()), mb.rows, out);
    input.release(mb.first_row, mb.rows, model.input_width());
    std::copy(out.begin(), out.end(), r.output.begin() + static_cast<std::ptrdiff_t>(mb.first_row * model.output_width()));
  }
  r.seconds = seconds_since(t0);
  return r;
}

int run_inference(transport::Bootstrap& boot, const InferenceOptions& o) {
  const auto& me = boot.placement();
  auto fail = [&](int code, const std::string& message) -> int {
    std::fprintf(stderr, "%s: rank %u on %s: %s\n", o.label().c_str(), me.rank, me.hostname.c_str(), message.c_str());
    std::fflush(stderr);
    boot.abort(code, message);
    return code;  // not reached: abort ends this process
  };
  set_blas_threads(o.blas_threads);

  Job job;
  std::unique_ptr<OutputSink> sink;
  PredictionOptions predictions{o.top_k, {}};
  try {
    job = prepare_job(o, boot);
  } catch (const std::exception& e) {
    return fail(kBadInput, e.what());
  }
  if (o.inputs.skip_bad && names_images(o.input)) {  // the ranks that decoded say which images they left out
    auto lists = boot.allgather_text("cnet.run.skipped", common::join(job.input.skipped, "\n"));
    if (job.input.data.empty()) {
      drop_skipped(job.input, common::split(lists.at(0), '\n'));
      job.all = micro_batches(job.input.rows, o.micro_batch);
    }
  }
  try {
    if (me.rank == job.layout.writer()) {
      refuse_output_over_inputs(o);
      refuse_trace_over_job_files(o);
      if (!o.labels.empty()) predictions.labels = read_labels(o.labels, job.model.output_width());
      std::string identity = file_identity(o.model) + " " + input_identity(o, job.input) + " micro-batch " + std::to_string(o.micro_batch);
      sink = std::make_unique<OutputSink>(o.label(), o.tensor_output(), job.input.rows, job.model.output_width(), identity, job.all.size(), resuming(o));
    }
  } catch (const std::exception& e) {
    return fail(kBadInput, e.what());
  }
  auto todo = plan_work(boot, job, sink);

  std::optional<transport::UcxChannel> channel;
  try {
    channel.emplace(boot, transport::UcxOptions{o.detect_peer_failure, std::chrono::milliseconds(o.timeout), {}});
  } catch (const std::exception& e) {
    return fail(kStageFailure, std::string("cannot set up the data path: ") + e.what());
  }
  auto describe = [&](std::uint32_t rank) {
    std::string s = "stage " + std::to_string(job.layout.stage_of(rank)) + "/" + std::to_string(job.layout.stages);
    if (job.layout.replicas > 1) s += " of replica " + std::to_string(job.layout.replica_of(rank));
    return s + " (rank " + std::to_string(rank) + " on " + channel->hostname_of(rank) + ")";
  };
  if (any_gpu(o.stage_devices)) {
    try {
      link_gpu_stages(boot, job, o.timeout);
    } catch (const std::exception& e) {
      return fail(kStageFailure, std::string("cannot link the GPU stages: ") + e.what());
    }
  }
  if (me.rank == 0) print_banner(o, job, *channel, todo.size());
  std::vector<std::size_t> per_replica;  // at the writer: micro-batches each replica computed
  ComputeClock mine;
  std::vector<RankSummary> ranks;
  try {
    CutShares cut;
    if (job.layout.stages == 1 && job.layout.replicas > 1) per_replica = run_replicas_on_demand(*channel, job, todo, sink.get(), mine);
    else cut = run_stage(*channel, job, todo, sink.get(), mine);
    ranks = gather_summaries(*channel, job, mine, cut);
  } catch (const transport::PeerFailure& e) {
    return fail(kStageFailure, describe(e.rank()) + " failed: " + e.what() + "; the job stops (rerun with --resume to finish)");
  } catch (const std::exception& e) {
    return fail(kStageFailure, describe(me.rank) + ": " + e.what() + "; the job stops (rerun with --resume to finish)");
  }
  std::vector<RankTrace> trace;
  if (!o.trace.empty()) {
    auto spans = boot.allgather_values<ComputeSpan>("cnet.run.trace", mine.spans());
    for (std::uint32_t r = 0; r < spans.size(); ++r) trace.push_back({describe(r), std::move(spans[r])});
  }
  if (!sink) return kOk;

  try {
    sink->finish();
  } catch (const std::exception& e) {
    return fail(kStageFailure, e.what());
  }
  nlohmann::json summary = summarize_run(o, job, *sink, todo, ranks, std::move(per_replica), me.size);
  sink.reset();
  if (!o.trace.empty()) write_trace(o, trace);
  int code = o.verify ? verify_output(o, job, summary["rows_per_second"].get<double>(), todo.size() == job.all.size(), me.size, summary) : kOk;
  if (writes_predictions(o.output)) {
    try {
      write_predictions_of_run(o, job, predictions, summary);
    } catch (const std::exception& e) {
      return fail(kStageFailure, e.what());
    }
  }
  if (o.json) std::printf("%s\n", summary.dump(2).c_str());
  return code;
}

}  // namespace cnet::inference