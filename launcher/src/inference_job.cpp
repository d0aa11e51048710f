#include "cnet/launcher/inference_job.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"
#include "cnet/launcher/compute_trace.hpp"
#include "cnet/launcher/forward.hpp"
#include "cnet/launcher/gpu_stage.hpp"
#include "cnet/launcher/output_sink.hpp"
#include "cnet/launcher/swing_reports.hpp"
#include "cnet/launcher/swing_stage.hpp"
#include "cnet/transport/collectives.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using transport::UcxChannel;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct InputRows {
  std::unique_ptr<SafetensorsFile> file;
  std::vector<float> storage;
  std::span<const float> data;
  std::size_t rows = 0;
};

// The input is one 2-D tensor [rows, width]: named "input", or the file's only tensor.
InputRows open_input(const std::string& path, std::size_t width) {
  InputRows in;
  in.file = std::make_unique<SafetensorsFile>(path);
  std::string name = "input";
  if (!in.file->tensors().count(name)) {
    if (in.file->tensors().size() != 1)
      throw FormatError(path + ": needs a tensor named 'input' of shape [rows, " + std::to_string(width) + "]");
    name = in.file->tensors().begin()->first;
  }
  const TensorInfo& t = in.file->tensor(name);
  if (t.shape.size() != 2 || t.shape[1] != width)
    throw FormatError(path + ": tensor '" + name + "' has shape " + nlohmann::json(t.shape).dump() + ", but the model's first layer takes rows of width " +
                      std::to_string(width) + " ([rows, " + std::to_string(width) + "])");
  in.data = in.file->floats(name, in.storage);
  in.rows = t.shape[0];
  return in;
}

std::span<std::byte> bytes(std::vector<float>& v) { return std::as_writable_bytes(std::span(v)); }
// Activations between stages and finished rows to the writer never share a tag.
std::uint32_t activation_tag(std::uint32_t mb) { return 2 * mb; }
std::uint32_t output_tag(std::uint32_t mb) { return 2 * mb + 1; }

// --resume, or --resume=auto with a progress file from an earlier run.
bool resuming(const InferenceOptions& o) {
  using R = InferenceOptions::Resume;
  return o.resume == R::yes || (o.resume == R::automatic && std::filesystem::exists(o.output + ".progress"));
}

// Whether two paths name one file: the same inode (another name, a hard or symbolic link), or, where one
// is not there yet, the same path once resolved.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;
  fs::path ra = fs::weakly_canonical(fs::absolute(a), ec);
  if (ec) return false;
  fs::path rb = fs::weakly_canonical(fs::absolute(b), ec);
  return !ec && ra == rb;
}

// What the job reads, as an error names it.
std::vector<std::pair<std::string, std::string>> job_inputs(const InferenceOptions& o) {
  return {{"--model", o.model}, {"--input", o.input}, {"the model's layer list", std::filesystem::path(o.model).replace_extension(".layers.json").string()}};
}

// An output that is one of the job's inputs would be destroyed while it is read (truncated under its
// mapping): refused, also when it is the same file under another name or a link.
void refuse_output_over_inputs(const InferenceOptions& o) {
  for (const std::string& out : {o.output, o.output + ".partial", o.output + ".progress"})
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
  files.insert(files.end(), {{"--output", o.output}, {"the output's partial file", o.output + ".partial"}, {"the output's progress file", o.output + ".progress"}});
  for (const auto& [flag, path] : files)
    if (same_file(o.trace, path))
      throw FormatError("--trace " + o.trace + " is the same file as " + flag + " " + path + "; writing it would destroy it: choose another trace file");
}

// The trace is extra: the output is complete whether or not it can be written.
void write_trace(const InferenceOptions& o, const std::vector<RankTrace>& ranks) {
  try {
    common::write_file_atomically(o.trace, chrome_trace(ranks));
    std::fprintf(stderr, "cnet-run %s: trace -> %s (open in https://ui.perfetto.dev or chrome://tracing)\n", o.name.c_str(), o.trace.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnet-run %s: warning: no trace written: %s (the output is complete)\n", o.name.c_str(), e.what());
  }
}

struct Verdict {
  bool identical = true;
  std::size_t differing = 0;
  double max_abs = 0, max_rel = 0;
  std::size_t first_row = 0;
};

Verdict compare(std::span<const float> got, std::span<const float> want, std::size_t width) {
  Verdict v;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
    if (v.differing++ == 0) v.first_row = i / width;
    double abs = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (std::isnan(abs)) abs = INFINITY;
    v.max_abs = std::max(v.max_abs, abs);
    v.max_rel = std::max(v.max_rel, abs / std::max(std::fabs(static_cast<double>(want[i])), 1e-30));
  }
  v.identical = v.differing == 0;
  return v;
}

}  // namespace

int gpu_for_task(unsigned local_rank) { return cuda_device_for_task(CudaStageModule::load().device_count(), local_rank); }

SingleProcessResult run_single_process(const std::string& model_path, const std::string& input_path, std::size_t micro_batch,
                                       int gpu_device) {
  SafetensorsFile weights(model_path);
  ModelSpec model = load_model(weights);
  InputRows input = open_input(input_path, model.input_width());
  StageRange whole{0, model.layers.size(), 0};
  auto forward = open_stage(ComputeDevice{gpu_device >= 0, gpu_device}, weights, model, 0, whole, micro_batch);
  SingleProcessResult r;
  r.output.resize(input.rows * model.output_width());
  std::vector<float> out;
  auto t0 = Clock::now();
  for (const MicroBatch& mb : micro_batches(input.rows, micro_batch)) {
    forward->forward(input.data.subspan(mb.first_row * model.input_width(), mb.rows * model.input_width()), mb.rows, out);
    std::copy(out.begin(), out.end(), r.output.begin() + static_cast<std::ptrdiff_t>(mb.first_row * model.output_width()));
  }
  r.seconds = seconds_since(t0);
  return r;
}

namespace {

// Everything a rank needs before it computes, checked before any rank computes or the writer touches
// the output: the layout, the model and this rank's stage of it, the input.
struct Job {
  JobLayout layout;
  std::unique_ptr<SafetensorsFile> weights;
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

Job prepare_job(const InferenceOptions& o, const transport::Placement& me) {
  const std::uint32_t rank = me.rank;
  Job job;
  job.layout = make_layout(o.scheme, me.size, o.num_stages);
  job.weights = std::make_unique<SafetensorsFile>(o.model);
  job.model = load_model(*job.weights);
  job.stages = o.stage_layers.empty() ? balance_stages(job.model, job.layout.stages)
                                      : split_stages(job.model, o.stage_layers, job.layout.stages);
  job.input = open_input(o.input, job.model.input_width());
  const unsigned stage = job.layout.stage_of(rank);
  if (stage_on_gpu(o.stage_devices, stage, job.layout.stages)) job.gpu = gpu_for_task(me.local_rank);
  const bool cpu_pipeline = o.swing_cuts && job.layout.stages > 1 && !any_gpu(o.stage_devices);
  job.cuts = cpu_pipeline ? plan_cut_swings(job.model, job.stages) : std::vector<CutSwing>(job.layout.stages - 1);
  const CutSwing before = stage > 0 ? job.cuts[stage - 1] : CutSwing{}, after = stage + 1 < job.layout.stages ? job.cuts[stage] : CutSwing{};
  if (before.any() || after.any()) {
    auto swing = std::make_unique<SwingStage>(*job.weights, job.model, job.stages, stage, before, after);
    job.swing = swing.get();
    job.forward = std::move(swing);
  } else {
    job.forward = open_stage(ComputeDevice{job.gpu >= 0, job.gpu}, *job.weights, job.model, stage, job.stages[stage], o.micro_batch);
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

// "layers 7-8: on stage 0 or 1, whichever keeps the two even (--fixed-split: 7 on stage 0, 8 on stage 1)"
std::string describe_cut(const Job& job, unsigned k) {
  const CutSwing& c = job.cuts[k];
  const std::size_t last = job.stages[k].last - 1, first = job.stages[k + 1].first;
  const std::string up = std::to_string(k), down = std::to_string(k + 1);
  std::string layers = c.give && c.take ? "layers " + std::to_string(last) + "-" + std::to_string(first)
                                        : "layer " + std::to_string(c.give ? last : first);
  std::string fixed = c.give && c.take ? std::to_string(last) + " on stage " + up + ", " + std::to_string(first) + " on stage " + down
                                       : "stage " + (c.give ? up : down);
  return layers + ": on stage " + up + " or " + down + ", whichever keeps the two even (--fixed-split: " + fixed + ")";
}

void print_banner(const InferenceOptions& o, const Job& job, const UcxChannel& ch, std::size_t todo) {
  std::set<std::string> hosts;
  for (std::uint32_t r = 0; r < ch.size(); ++r) hosts.insert(ch.hostname_of(r));
  double total_cost = 0;
  for (const auto& s : job.stages) total_cost += s.cost;
  const unsigned S = job.layout.stages, R = job.layout.replicas;
  std::fprintf(stderr, "cnet-run %s: %u stage%s x %u replica%s on %s; %zu layers (width %zu -> %zu); %zu micro-batches of %zu rows; %s\n",
               o.name.c_str(), S, S > 1 ? "s" : "", R, R > 1 ? "s" : "", common::join({hosts.begin(), hosts.end()}, ",").c_str(),
               job.model.layers.size(), job.model.input_width(), job.model.output_width(), job.all.size(), o.micro_batch,
               (mixed_devices(o.stage_devices) ? std::string("stages on CPUs and GPUs")
                                               : job.forward->device() + (job.gpu >= 0 && S > 1 ? "; activations: " + std::string(describe(job.to_next)) : ""))
                   .c_str());
  for (unsigned s = 0; s < S; ++s)
    std::fprintf(stderr, "  stage %u: layers %zu-%zu (%.0f%% of the work) on %s%s\n", s, job.stages[s].first, job.stages[s].last - 1,
                 100 * job.stages[s].cost / total_cost, ch.hostname_of(job.layout.rank_of(0, s)).c_str(),
                 any_gpu(o.stage_devices) ? (stage_on_gpu(o.stage_devices, s, S) ? ", GPU" : ", CPU") : "");
  for (unsigned k = 0; k < job.cuts.size(); ++k)
    if (job.cuts[k].any()) std::fprintf(stderr, "  %s\n", describe_cut(job, k).c_str());
  if (todo < job.all.size())
    std::fprintf(stderr, "cnet-run %s: resuming: %zu of %zu micro-batches already done, %zu to go\n", o.name.c_str(),
                 job.all.size() - todo, job.all.size(), todo);
  std::fflush(stderr);
}

// One message of a full micro-batch's size over each of this rank's links (the next and previous stage
// over UCX, the writer and the other replicas' last stages) before the clock starts: UCX connects and
// sets up its large-message protocol on first use, about 12 ms on one node here, which the first
// micro-batch would otherwise pay at every stage in turn, on the pipeline's critical path. Both sides
// of a link decide from the same job-wide facts, so every message is matched.
void prime_links(UcxChannel& ch, const Job& job, bool receive_here, bool send_here, bool writer) {
  if (job.all.empty()) return;
  constexpr std::uint32_t kPrimeTag = 0xffffffffu;  // before any micro-batch's, and matched in order
  const JobLayout& layout = job.layout;
  const std::uint32_t rank = ch.rank();
  const std::size_t rows = job.all.front().rows;  // the largest: only the last may be shorter
  std::vector<float> in(receive_here ? rows * job.forward->input_width() : 0), out(rows * job.forward->output_width());
  std::vector<std::vector<float>> outputs(writer ? layout.replicas - 1 : 0, std::vector<float>(out.size()));
  std::vector<std::unique_ptr<UcxChannel::Request>> requests;
  if (receive_here) requests.push_back(ch.recv(rank - 1, kPrimeTag, bytes(in)));
  for (unsigned r = 1; r < layout.replicas && writer; ++r) requests.push_back(ch.recv(layout.rank_of(r, layout.stages - 1), kPrimeTag, bytes(outputs[r - 1])));
  if (send_here) requests.push_back(ch.send(rank + 1, kPrimeTag, bytes(out)));
  if (layout.stage_of(rank) + 1 == layout.stages && !writer) requests.push_back(ch.send(layout.writer(), kPrimeTag, bytes(out)));
  ch.wait_all(requests);
}

// Data parallel with one stage per replica: the writer (rank 0) hands micro-batches out as the replicas
// ask, so a replica on a slower or busier node takes fewer and the job does not wait on the slowest one's
// fixed share. Each replica asks for its next micro-batch near the end of the one it computes, so the
// answer (given by the writer between its own layers) is there before it is needed. Returns, at the
// writer, how many micro-batches each replica computed. (With several stages per replica the split stays
// fixed: the later stages and the writer find each micro-batch by its index.)
constexpr std::uint32_t kAskTag = 0xfffffffdu, kGrantTag = 0xfffffffeu, kNoMore = 0xffffffffu;

std::vector<std::size_t> run_replicas_on_demand(UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo, OutputSink* sink,
                                                ComputeClock& busy) {
  const std::uint32_t rank = ch.rank(), writer = job.layout.writer();
  const unsigned R = job.layout.replicas;
  const std::size_t in_width = job.forward->input_width(), out_width = job.forward->output_width();
  auto input_of = [&](const MicroBatch& mb) { return job.input.data.subspan(mb.first_row * in_width, mb.rows * in_width); };
  prime_links(ch, job, false, false, rank == writer);
  std::vector<float> result;
  if (rank != writer) {
    std::array<std::vector<float>, 2> outbox;
    std::array<std::unique_ptr<UcxChannel::Request>, 2> sending;
    std::uint32_t grant = kNoMore;
    auto ask = [&] {
      ch.send_blocking(writer, kAskTag, {});
      return ch.recv(writer, kGrantTag, std::as_writable_bytes(std::span(&grant, 1)));
    };
    auto answer = ask();
    Clock::duration last{};  // what the last micro-batch took
    for (std::size_t j = 0;; ++j) {
      ch.wait(*answer);
      if (grant == kNoMore) break;
      const MicroBatch& mb = todo.at(grant);
      // The next is asked for three quarters of the way through this one: early enough that the answer
      // (given between the writer's layers) is there when needed, late enough that a micro-batch is not
      // held here while another replica could have started it, which near the end leaves that replica
      // idle while this one finishes two.
      const auto started = Clock::now(), ask_at = started + last * 3 / 4;
      answer.reset();
      auto ask_when_due = [&] {
        if (!answer && Clock::now() >= ask_at) answer = ask();
      };
      ask_when_due();
      busy.time(mb.index, static_cast<std::uint32_t>(mb.rows), [&] {
        job.forward->forward(input_of(mb), mb.rows, result, [&] {
          ch.progress();
          ask_when_due();
        });
      });
      if (!answer) answer = ask();
      last = Clock::now() - started;
      if (sending[j % 2]) ch.wait(*sending[j % 2]);  // the send from two micro-batches ago has left this buffer
      outbox[j % 2].swap(result);
      sending[j % 2] = ch.send(writer, output_tag(mb.index), bytes(outbox[j % 2]));
    }
    for (auto& r : sending)
      if (r) ch.wait(*r);
    return {};
  }
  // The writer: its own micro-batches, and between its layers the others' asks and finished rows.
  struct Replica {
    std::uint32_t rank;
    std::uint32_t grant = kNoMore;
    std::unique_ptr<UcxChannel::Request> ask, answer;
    bool finished = false;
  };
  struct Incoming {
    MicroBatch mb;
    std::vector<float> rows;
    std::unique_ptr<UcxChannel::Request> request;
  };
  std::vector<Replica> others;
  for (unsigned r = 1; r < R; ++r) others.emplace_back().rank = job.layout.rank_of(r, 0);
  std::vector<std::size_t> computed(R, 0);
  std::list<Incoming> incoming;
  std::size_t next = 0;
  for (auto& o : others) o.ask = ch.recv(o.rank, kAskTag, {});
  auto serve = [&] {
    for (std::size_t i = 0; i < others.size(); ++i) {
      Replica& o = others[i];
      if (o.finished || !ch.test(*o.ask)) continue;
      if (o.answer) ch.wait(*o.answer);  // 4 bytes, long delivered: its buffer is free again
      o.grant = next < todo.size() ? static_cast<std::uint32_t>(next++) : kNoMore;
      o.answer = ch.send(o.rank, kGrantTag, std::as_bytes(std::span(&o.grant, 1)));
      if (o.grant == kNoMore) {
        o.finished = true;
        continue;
      }
      ++computed[i + 1];
      const MicroBatch& mb = todo[o.grant];
      Incoming& in = incoming.emplace_back(Incoming{mb, std::vector<float>(mb.rows * out_width), nullptr});
      in.request = ch.recv(o.rank, output_tag(mb.index), bytes(in.rows));
      o.ask = ch.recv(o.rank, kAskTag, {});
    }
    for (auto it = incoming.begin(); it != incoming.end();) {
      if (!ch.test(*it->request)) {
        ++it;
        continue;
      }
      sink->put(it->mb, it->rows);
      it = incoming.erase(it);
    }
  };
  sink->start();
  while (next < todo.size()) {
    const MicroBatch& mb = todo[next++];
    ++computed[0];
    busy.time(mb.index, static_cast<std::uint32_t>(mb.rows), [&] {
      job.forward->forward(input_of(mb), mb.rows, result, [&] {
        ch.progress();
        serve();
      });
    });
    sink->put(mb, result);
    serve();
  }
  // Every micro-batch is handed out: answer each replica's last ask, then take the rows still out, with
  // blocking waits, so a replica that died or hung is reported (or timed out) as in the fixed split.
  for (auto& o : others)
    if (!o.finished) {
      ch.wait(*o.ask);
      serve();
    }
  while (!incoming.empty()) {
    ch.wait(*incoming.front().request);
    serve();
  }
  for (auto& o : others)
    if (o.answer) ch.wait(*o.answer);
  return computed;
}

// At a swinging cut, the shares of micro-batches the stage before it took the next stage's first layer
// and gave away its own last; -1 where the cut does not swing.
struct CutShares {
  double took = -1, gave = -1;
};
CutMove arrived_move(float marker) { return marker > 0.5f ? CutMove::take : marker < -0.5f ? CutMove::give : CutMove::keep; }

// This rank's share of the work: receive (or read) each micro-batch, run its stage, send it on (or to
// the writer, or into the output). Receives are posted two ahead and sends double-buffered, so
// transfers overlap the computing; transfers also progress between layers. Returns, where the cut
// after this stage swings, the shares of micro-batches this stage took and gave a layer there.
CutShares run_stage(UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo, OutputSink* sink, ComputeClock& busy) {
  struct Slot {
    std::vector<float> rows;
    std::unique_ptr<UcxChannel::Request> request;
  };
  const JobLayout& layout = job.layout;
  const std::uint32_t rank = ch.rank();
  const unsigned S = layout.stages, R = layout.replicas, stage = layout.stage_of(rank), replica = layout.replica_of(rank);
  const auto mine = share_of(todo, replica, R);
  const std::size_t in_width = job.forward->input_width(), out_width = job.forward->output_width();
  // Over NCCL the stage itself receives from the previous stage and sends to the next one.
  const bool receive_here = stage > 0 && !job.forward->input_arrives_directly();
  const bool send_here = stage + 1 < S && !job.forward->output_leaves_directly();
  std::array<Slot, 2> inbox, outbox;
  // At a swinging cut each activation ends in one more float, what the sender did there (a CutMove:
  // -1 gave, 0 kept, 1 took). The receiver reports back what it measured; the sender decides from both.
  const bool first_swings = job.swing && job.swing->before().any(), next_swings = job.swing && job.swing->after().any();
  BoundarySwing cut(job.swing ? job.swing->after() : CutSwing{});
  SwingReportsIn reports_in(ch, rank + 1, mine, cut);
  SwingReportsOut reports_out(ch, rank - 1);
  auto post_receive = [&](std::size_t j) {
    Slot& slot = inbox[j % 2];
    slot.rows.resize(mine[j].rows * in_width + (first_swings ? 1 : 0));
    slot.request = ch.recv(rank - 1, activation_tag(mine[j].index), bytes(slot.rows));
  };
  auto send = [&](std::size_t j, std::uint32_t peer, std::uint32_t tag, std::vector<float>& rows) {
    Slot& slot = outbox[j % 2];
    if (slot.request) ch.wait(*slot.request);  // the send from two micro-batches ago has left this buffer
    slot.rows.swap(rows);
    slot.request = ch.send(peer, tag, bytes(slot.rows));
  };
  if (receive_here)
    for (std::size_t j = 0; j < std::min<std::size_t>(2, mine.size()); ++j) post_receive(j);
  // The writer takes the other replicas' rows as they arrive, receives posted two rounds ahead, instead
  // of in lockstep with its own: a replica running a little behind no longer stalls it.
  struct Incoming {
    MicroBatch mb;
    std::vector<float> rows;
    std::unique_ptr<UcxChannel::Request> request;
  };
  std::list<Incoming> others;
  std::size_t next_other = 0;  // index into todo of the next other replica's micro-batch to post for
  auto post_others = [&](std::size_t rounds) {
    for (; next_other < std::min(todo.size(), rounds * R); ++next_other) {
      if (next_other % R == 0) continue;  // the writer's own
      const MicroBatch& o = todo[next_other];
      Incoming& in = others.emplace_back(Incoming{o, std::vector<float>(o.rows * out_width), nullptr});
      in.request = ch.recv(layout.rank_of(static_cast<unsigned>(next_other % R), S - 1), output_tag(o.index), bytes(in.rows));
    }
  };
  auto take_others = [&](bool all) {
    for (auto it = others.begin(); it != others.end();) {
      if (all) ch.wait(*it->request);
      else if (!ch.test(*it->request)) {
        ++it;
        continue;
      }
      sink->put(it->mb, it->rows);
      it = others.erase(it);
    }
  };
  prime_links(ch, job, receive_here, send_here, rank == layout.writer());
  if (sink && R > 1) post_others(2);
  if (sink) sink->start();
  std::vector<float> result;
  std::size_t j = 0;
  // Behind a swinging cut: when the next micro-batch's input was first seen here (between layers), so
  // the report says how long it had been waiting (the stage before may take on work for that long).
  std::optional<Clock::time_point> next_seen;
  auto let_transfers_progress = [&] {
    ch.progress();
    if (next_swings) reports_in.take_arrived();
    if (first_swings && !next_seen && j + 1 < mine.size() && ch.test(*inbox[(j + 1) % 2].request)) next_seen = Clock::now();
  };
  for (; j < mine.size(); ++j) {
    const MicroBatch& mb = mine[j];
    std::span<const float> x;
    double slack = 0;  // how long its input waited here for this stage (< 0: this stage waited for it)
    if (stage == 0) {
      x = job.input.data.subspan(mb.first_row * in_width, mb.rows * in_width);
    } else if (receive_here) {
      const auto waiting = Clock::now();
      ch.wait(*inbox[j % 2].request);
      slack = next_seen ? std::chrono::duration<double>(waiting - *next_seen).count() : -seconds_since(waiting);
      next_seen.reset();
      x = std::span<const float>(inbox[j % 2].rows).first(mb.rows * in_width);
    }
    job.forward->expect_next(j + 1 < mine.size() ? mine[j + 1].rows : 0);
    if (job.swing) {
      const CutMove arrived = first_swings ? arrived_move(inbox[j % 2].rows.back()) : CutMove::keep;
      const CutMove move = next_swings ? cut.next(mb.rows, j + 1 == mine.size()) : CutMove::keep;
      SwingStage::Timing t;
      busy.time(mb.index, static_cast<std::uint32_t>(mb.rows),
                [&] { t = job.swing->forward(x, mb.rows, arrived, move, result, let_transfers_progress); });
      if (first_swings) {
        t.before.slack = slack;
        reports_out.send(t.before);
      }
      if (next_swings) {
        cut.upstream_measured(t.after, mb.rows);
        result.push_back(static_cast<float>(static_cast<int>(move)));
      }
    } else {
      busy.time(mb.index, static_cast<std::uint32_t>(mb.rows), [&] { job.forward->forward(x, mb.rows, result, let_transfers_progress); });
    }
    if (receive_here && j + 2 < mine.size()) post_receive(j + 2);  // forward() has copied its input
    if (stage + 1 < S) {
      if (send_here) send(j, rank + 1, activation_tag(mb.index), result);
    } else if (!sink) {
      send(j, layout.writer(), output_tag(mb.index), result);
    } else {
      sink->put(mb, result);
      post_others(j + 2);
      take_others(false);
    }
  }
  if (sink) {
    post_others(todo.size());
    take_others(true);
  }
  if (job.gpu >= 0) busy.time(ComputeSpan::kFinish, 0, [&] { job.forward->finish(let_transfers_progress); });
  else job.forward->finish(let_transfers_progress);
  for (auto& slot : outbox)
    if (slot.request) ch.wait(*slot.request);
  if (next_swings) reports_in.take_all();
  reports_out.wait_all();
  if (!next_swings) return {-1, -1};
  const double decided = static_cast<double>(std::max<std::size_t>(cut.decided(), 1));
  return {static_cast<double>(cut.taken()) / decided, static_cast<double>(cut.given()) / decided};
}

// What each rank did, in rank order: its computing time, and where the cut after it swings, the shares
// of micro-batches it took and gave a layer there. Also the run's last synchronisation: a sender whose
// last messages left its buffers may not exit before they are received (a peer that is gone fails
// every receive from it, delivered or not), and no rank gets past this before every rank has reached it.
struct RankSummary {
  double busy_seconds = 0;
  CutShares cut;
};
std::vector<RankSummary> gather_summaries(UcxChannel& ch, const ComputeClock& busy, CutShares cut) {
  std::vector<RankSummary> all(ch.size());
  const RankSummary mine{busy.seconds(), cut};
  transport::Collectives(ch).allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
  return all;
}

// Per cut, the shares of micro-batches whose layer the stage before it took and gave there, averaged
// over the replicas; -1 where the cut does not swing.
std::vector<CutShares> cut_shares(const JobLayout& layout, const std::vector<RankSummary>& ranks) {
  std::vector<CutShares> out(layout.stages - 1, CutShares{0, 0});
  for (std::uint32_t r = 0; r < ranks.size(); ++r) {
    const unsigned stage = layout.stage_of(r);
    if (stage + 1 == layout.stages) continue;
    CutShares& c = out[stage];
    const CutShares& mine = ranks[r].cut;
    c = mine.took < 0 ? mine : CutShares{c.took + mine.took / layout.replicas, c.gave + mine.gave / layout.replicas};
  }
  return out;
}

// "stage 0 88%, stage 1 97%": each rank's share of the run spent computing.
std::string busy_line(const JobLayout& layout, const std::vector<double>& busy, double seconds) {
  std::vector<std::string> parts;
  for (std::uint32_t r = 0; r < busy.size(); ++r) {
    std::vector<std::string> who;
    if (layout.replicas > 1) who.push_back("replica " + std::to_string(layout.replica_of(r)));
    if (layout.stages > 1) who.push_back("stage " + std::to_string(layout.stage_of(r)));
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", 100 * busy[r] / std::max(seconds, 1e-9));
    who.push_back(pct);
    parts.push_back(common::join(who, " "));
  }
  return common::join(parts, ", ");
}

// The stages with the cost each computed: a layer moved across a cut counts for the stage that
// computed it, in the share of micro-batches it did.
std::vector<StageRange> stages_as_run(const Job& job, const std::vector<CutShares>& shares) {
  std::vector<StageRange> out = job.stages;
  for (std::size_t k = 0; k < shares.size(); ++k) {
    if (shares[k].took < 0) continue;
    const double moved = shares[k].took * job.model.layers[job.stages[k + 1].first].cost() -
                         shares[k].gave * job.model.layers[job.stages[k].last - 1].cost();
    out[k].cost += moved;
    out[k + 1].cost -= moved;
  }
  return out;
}

// Each stage's computing seconds, averaged over the replicas (rank order is replica x stage).
std::vector<double> stage_busy(const JobLayout& layout, const std::vector<double>& busy) {
  std::vector<double> out(layout.stages, 0.0);
  for (std::uint32_t r = 0; r < busy.size(); ++r) out[layout.stage_of(r)] += busy[r] / layout.replicas;
  return out;
}

// --verify: the whole model on this process over the same micro-batches, compared with what was written:
// on the GPU the writer used when the stages ran on GPUs (bit-identical expected on the same GPU model),
// and then also against the CPU, whose error is reported and held to --verify-tolerance when one is set.
int verify_output(const InferenceOptions& o, const Job& job, double rate, bool whole_run, std::uint32_t ranks, nlohmann::json& summary) {
  try {
    // A job mixing CPU and GPU stages matches neither exactly: it is compared with the CPU, within
    // --verify-tolerance (which cnet-run requires for it).
    const int reference = mixed_devices(o.stage_devices) ? -1 : job.gpu;
    auto single = run_single_process(o.model, o.input, o.micro_batch, reference);
    SafetensorsFile produced(o.output);
    std::vector<float> storage;
    auto written = produced.floats("output", storage);
    Verdict v = compare(written, single.output, job.model.output_width());
    double single_rate = static_cast<double>(job.input.rows) / std::max(single.seconds, 1e-9);
    const char* one = reference >= 0 ? "one process running the whole model on this GPU" : "one process running the whole model";
    int code = kOk;
    if (v.identical) {
      std::fprintf(stderr, "cnet-run %s: verify: bit-identical to %s (%zu rows)\n", o.name.c_str(), one, job.input.rows);
    } else {
      std::fprintf(stderr, "cnet-run %s: verify: %zu of %zu values differ from %s (first in row %zu); max abs error %.3g, max rel error %.3g\n",
                   o.name.c_str(), v.differing, single.output.size(), one, v.first_row, v.max_abs, v.max_rel);
      if (o.verify_tolerance == 0 || !(v.max_rel <= o.verify_tolerance)) code = kVerifyMismatch;
    }
    if (whole_run)  // a resumed run timed only part of the work
      std::fprintf(stderr, "cnet-run %s: throughput: %.0f rows/s on %u ranks vs %.0f rows/s on %s: %.2fx\n", o.name.c_str(), rate, ranks,
                   single_rate, reference >= 0 ? "one process on this GPU" : "one process", rate / single_rate);
    summary["verify"] = {{"identical", v.identical}, {"differing_values", v.differing}, {"max_abs_error", v.max_abs},
                         {"max_rel_error", v.max_rel}, {"single_process_rows_per_second", single_rate},
                         {"single_process_seconds", single.seconds}};
    if (reference >= 0) {
      auto cpu = run_single_process(o.model, o.input, o.micro_batch);
      Verdict c = compare(written, cpu.output, job.model.output_width());
      double cpu_rate = static_cast<double>(job.input.rows) / std::max(cpu.seconds, 1e-9);
      bool within = o.verify_tolerance == 0 || c.max_rel <= o.verify_tolerance;
      std::fprintf(stderr, "cnet-run %s: verify: against the CPU path: max abs error %.3g, max rel error %.3g%s; CPU %.0f rows/s\n",
                   o.name.c_str(), c.max_abs, c.max_rel,
                   o.verify_tolerance == 0 ? " (informational: no --verify-tolerance)" : (within ? " (within --verify-tolerance)" : " (OVER --verify-tolerance)"),
                   cpu_rate);
      if (!within) code = kVerifyMismatch;
      summary["verify"]["cpu"] = {{"max_abs_error", c.max_abs}, {"max_rel_error", c.max_rel}, {"rows_per_second", cpu_rate}};
    }
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnet-run %s: verify failed: %s\n", o.name.c_str(), e.what());
    return kVerifyMismatch;
  }
}

}  // namespace

int run_inference(transport::Bootstrap& boot, const InferenceOptions& o) {
  const auto& me = boot.placement();
  auto fail = [&](int code, const std::string& message) -> int {
    std::fprintf(stderr, "cnet-run %s: rank %u on %s: %s\n", o.name.c_str(), me.rank, me.hostname.c_str(), message.c_str());
    std::fflush(stderr);
    boot.abort(code, message);
    return code;  // not reached: abort ends this process
  };
  set_blas_threads(o.blas_threads);

  Job job;
  std::unique_ptr<OutputSink> sink;
  try {
    job = prepare_job(o, me);
    if (me.rank == job.layout.writer()) {
      refuse_output_over_inputs(o);
      refuse_trace_over_job_files(o);
      std::string identity = file_identity(o.model) + " " + file_identity(o.input) + " micro-batch " + std::to_string(o.micro_batch);
      sink = std::make_unique<OutputSink>(o.name, o.output, job.input.rows, job.model.output_width(), identity, job.all.size(), resuming(o));
    }
  } catch (const std::exception& e) {
    return fail(kBadInput, e.what());
  }
  auto todo = plan_work(boot, job, sink);

  std::optional<UcxChannel> channel;
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
    ranks = gather_summaries(*channel, mine, cut);
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
  sink->line();
  double seconds = sink->elapsed();
  double rate = static_cast<double>(sink->rows_this_run()) / std::max(seconds, 1e-9);
  std::fprintf(stderr, "cnet-run %s: done: %zu rows in %.2f s (%.0f rows/s) -> %s\n", o.name.c_str(), sink->rows_this_run(), seconds, rate,
               o.output.c_str());
  std::vector<double> busy;  // every rank's seconds computing
  for (const auto& r : ranks) busy.push_back(r.busy_seconds);
  if (busy.size() > 1)  // where a stage is short of 100%, it waited: a slower stage, transfers, the output
    std::fprintf(stderr, "cnet-run %s: computing: %s of the run\n", o.name.c_str(), busy_line(job.layout, busy, seconds).c_str());
  const auto shares = cut_shares(job.layout, ranks);
  for (std::size_t k = 0; k < shares.size(); ++k) {
    const CutSwing& c = job.cuts[k];
    if (!c.any()) continue;
    std::vector<std::string> moved;
    char line[160];
    if (c.take)
      std::snprintf(line, sizeof line, "stage %zu computed layer %zu for %.0f%% of the micro-batches", k, job.stages[k + 1].first, 100 * shares[k].took);
    if (c.take) moved.push_back(line);
    if (c.give)
      std::snprintf(line, sizeof line, "stage %zu computed layer %zu for %.0f%%", k + 1, job.stages[k].last - 1, 100 * shares[k].gave);
    if (c.give) moved.push_back(line);
    std::fprintf(stderr, "cnet-run %s: at the cut of stages %zu and %zu: %s\n", o.name.c_str(), k, k + 1, common::join(moved, "; ").c_str());
  }
  // Stages on nodes of unequal speed (or given a lopsided --stage-layers): say which split evens them out.
  auto advice = faster_split(job.model, stages_as_run(job, shares), stage_busy(job.layout, busy));
  if (advice) {
    std::vector<std::string> counts;
    for (std::size_t n : advice->layers_per_stage) counts.push_back(std::to_string(n));
    std::fprintf(stderr, "cnet-run %s: stage %zu held the others back: at the speeds the stages showed, --stage-layers %s "
                 "would even them out (about %.0f%% off its time)\n", o.name.c_str(), advice->slowest, common::join(counts, ",").c_str(),
                 100 * advice->gain);
  }
  nlohmann::json summary = {{"name", o.name}, {"ranks", me.size}, {"stages", job.layout.stages}, {"replicas", job.layout.replicas},
                            {"micro_batches", job.all.size()}, {"micro_batch_rows", o.micro_batch}, {"rows", job.input.rows},
                            {"rows_this_run", sink->rows_this_run()}, {"seconds", seconds}, {"rows_per_second", rate},
                            {"output", o.output}, {"busy_seconds", busy}};
  if (advice) summary["suggested_stage_layers"] = advice->layers_per_stage;
  if (job.layout.stages > 1) {
    summary["cut_moves"] = nlohmann::json::array();
    for (const auto& c : shares) summary["cut_moves"].push_back({{"took", c.took}, {"gave", c.gave}});
  }
  if (job.layout.replicas > 1) {
    if (per_replica.empty())  // the fixed split
      for (unsigned r = 0; r < job.layout.replicas; ++r) per_replica.push_back(share_of(todo, r, job.layout.replicas).size());
    summary["micro_batches_per_replica"] = per_replica;
  }
  sink.reset();
  if (!o.trace.empty()) write_trace(o, trace);
  int code = o.verify ? verify_output(o, job, rate, todo.size() == job.all.size(), me.size, summary) : kOk;
  if (o.json) std::printf("%s\n", summary.dump(2).c_str());
  return code;
}

}  // namespace cnet::launcher
