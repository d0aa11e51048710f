#include "job.hpp"

#include <filesystem>

#include "cnet/common/files.hpp"
#include "cnet/inference/gpu_plan.hpp"

namespace cnet::inference {
namespace {

using common::same_file;

// What the job reads, as an error names it.
std::vector<std::pair<std::string, std::string>> job_inputs(const InferenceOptions& o) {
  std::vector<std::pair<std::string, std::string>> files = {
      {"--model", o.model}, {"the model's layer list", std::filesystem::path(o.model).replace_extension(".layers.json").string()}};
  if (!names_images(o.input)) files.push_back({"--input", o.input});
  if (!o.labels.empty()) files.push_back({"--labels", o.labels});
  return files;
}

}  // namespace

// An output that is one of the job's inputs would be destroyed while it is read (truncated under its
// mapping): refused, also when it is the same file under another name or a link.
void refuse_output_over_inputs(const InferenceOptions& o) {
  const std::string tensor = o.tensor_output();
  for (const std::string& out : {o.output, tensor, tensor + ".partial", tensor + ".progress"})
    for (const auto& [flag, in] : job_inputs(o))
      if (same_file(out, in))
        throw FormatError("--output " + o.output + ": " + out + " is the same file as " + flag + " " + in +
                          " (the same path or a link to it); writing it would destroy it: choose another output file");
}

// --trace must not land on a file the job reads or writes.
void refuse_trace_over_job_files(const InferenceOptions& o) {
  if (o.trace.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path trace = fs::weakly_canonical(fs::absolute(o.trace), ec);
  if (ec) throw FormatError("--trace " + o.trace + ": " + ec.message());
  if (fs::is_directory(trace)) throw FormatError("--trace " + o.trace + " is a directory: give a file name, e.g. " + (fs::path(o.trace) / "trace.json").string());
  if (!fs::is_directory(trace.parent_path()))
    throw FormatError("--trace " + o.trace + ": folder " + trace.parent_path().string() + " does not exist (create it first)");
  auto files = job_inputs(o);
  files.insert(files.end(), {{"--output", o.output}, {"the output tensor", o.tensor_output()}, {"the output's partial file", o.tensor_output() + ".partial"},
                             {"the output's progress file", o.tensor_output() + ".progress"}});
  for (const auto& [flag, path] : files)
    if (same_file(o.trace, path))
      throw FormatError("--trace " + o.trace + " is the same file as " + flag + " " + path + "; writing it would destroy it: choose another trace file");
}


bool resuming(const InferenceOptions& o) {
  using R = InferenceOptions::Resume;
  return o.resume == R::yes || (o.resume == R::automatic && std::filesystem::exists(o.tensor_output() + ".progress"));
}

Job prepare_job(const InferenceOptions& o, transport::Bootstrap& boot) {
  const transport::Placement& me = boot.placement();
  const std::uint32_t rank = me.rank;
  Job job;
  job.layout = make_layout(o.scheme, me.size, o.num_stages);
  LoadedModel loaded = open_model(o.model);
  job.weights = std::move(loaded.weights);
  job.model = std::move(loaded.spec);
  if (job.model.graph && job.layout.stages > 1) {  // stages cut by time as measured where they run, alike on every rank
    const auto mine = timed_seconds(job.model);
    agree_on_timed_costs(job.model, boot.allgather_values<double>("cnet.run.timed", mine));
  }
  job.stages = o.stage_layers.empty() ? balance_stages(job.model, job.layout.stages)
                                      : split_stages(job.model, o.stage_layers, job.layout.stages);
  const unsigned stage = job.layout.stage_of(rank);
  // Images are decoded once, where rows are read: the first stage's ranks (and the data-parallel
  // dispatcher, rank 0, which is one of them).
  job.input = open_input(o.input, job.model, o.inputs, stage == 0);
  if (stage_on_gpu(o.stage_devices, stage, job.layout.stages)) job.gpu = gpu_for_task(me.local_rank);
  const bool cpu_pipeline = o.swing_cuts && job.layout.stages > 1 && !any_gpu(o.stage_devices);
  job.cuts = cpu_pipeline ? plan_cut_swings(job.model, job.stages) : std::vector<CutSwing>(job.layout.stages - 1);
  const CutSwing before = stage > 0 ? job.cuts[stage - 1] : CutSwing{}, after = stage + 1 < job.layout.stages ? job.cuts[stage] : CutSwing{};
  if (before.any() || after.any()) {
    auto swing = std::make_unique<SwingStage>(job.weights.get(), job.model, job.stages, stage, before, after);
    job.swing = swing.get();
    job.forward = std::move(swing);
  } else {
    job.forward = open_stage(ComputeDevice{job.gpu >= 0, job.gpu}, job.weights.get(), job.model, stage, job.stages[stage], o.micro_batch);
  }
  job.all = micro_batches(job.input.rows, o.micro_batch);
  return job;
}

// The writer opens the output (fresh, or resumed from its progress log) and decides what is left to do;
// every rank learns that list.
std::vector<MicroBatch> plan_work(transport::Bootstrap& boot, const Job& job, const std::unique_ptr<OutputSink>& sink) {
  std::vector<std::uint32_t> todo_ids;
  if (sink)
    for (const auto& mb : job.all)
      if (!sink->done().count(mb.index)) todo_ids.push_back(mb.index);
  auto plans = boot.allgather_values<std::uint32_t>("cnet.run.todo", todo_ids);
  std::vector<MicroBatch> todo;
  for (std::uint32_t id : plans.at(job.layout.writer())) todo.push_back(job.all.at(id));
  return todo;
}

// A job with GPU stages: every rank (CPU stages too) says where it computes and whether NCCL loads
// there; neighbours on different GPUs are then linked over NCCL (device to device), the others go
// through the host.
void link_gpu_stages(transport::Bootstrap& boot, Job& job, std::chrono::milliseconds timeout) {
  auto* gpu = job.gpu >= 0 ? static_cast<GpuStageForward*>(job.forward.get()) : nullptr;
  const auto& me = boot.placement();
  RankDevice mine{{me.hostname, ""}, false};
  if (gpu) {
    std::string no_nccl_because;  // NCCL missing here: this rank's pairs stay host-staged
    mine = {{me.hostname, gpu->uuid()}, CudaStageModule::load().nccl_available(no_nccl_because)};
  }
  std::vector<RankDevice> ranks;
  for (const auto& text : boot.allgather_text("cnet.run.devices", to_text(mine))) ranks.push_back(rank_device_from_text(text));
  StageLinks links = plan_stage_links(job.layout, ranks, me.rank);
  job.to_next = links.to_next;
  job.nccl = connect_nccl_pairs(boot, links, job.gpu);
  if (!gpu) return;
  gpu->set_stall_timeout(timeout);
  gpu->link(job.nccl.from_prev.get(), job.nccl.to_next.get());
}

void prime_links(transport::UcxChannel& ch, const Job& job, bool receive_here, bool send_here, bool writer) {
  if (job.all.empty()) return;
  constexpr std::uint32_t kPrimeTag = 0xffffffffu;  // before any micro-batch's, and matched in order
  const JobLayout& layout = job.layout;
  const std::uint32_t rank = ch.rank();
  const std::size_t rows = job.all.front().rows;  // the largest: only the last may be shorter
  std::vector<float> in(receive_here ? rows * job.forward->input_width() : 0), out(rows * job.forward->output_width());
  std::vector<std::vector<float>> outputs(writer ? layout.replicas - 1 : 0, std::vector<float>(out.size()));
  std::vector<std::unique_ptr<transport::UcxChannel::Request>> requests;
  if (receive_here) requests.push_back(ch.recv(rank - 1, kPrimeTag, bytes(in)));
  for (unsigned r = 1; r < layout.replicas && writer; ++r) requests.push_back(ch.recv(layout.rank_of(r, layout.stages - 1), kPrimeTag, bytes(outputs[r - 1])));
  if (send_here) requests.push_back(ch.send(rank + 1, kPrimeTag, bytes(out)));
  if (layout.stage_of(rank) + 1 == layout.stages && !writer) requests.push_back(ch.send(layout.writer(), kPrimeTag, bytes(out)));
  ch.wait_all(requests);
}

}  // namespace cnet::inference
