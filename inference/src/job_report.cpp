#include <algorithm>
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "cnet/common/files.hpp"
#include "cnet/common/text.hpp"
#include "cnet/inference/gpu_plan.hpp"
#include "cnet/transport/collectives.hpp"
#include "job.hpp"

namespace cnet::inference {
namespace {

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


}  // namespace

void write_trace(const InferenceOptions& o, const std::vector<RankTrace>& ranks) {
  try {
    common::write_file_atomically(o.trace, chrome_trace(ranks));
    std::fprintf(stderr, "%s: trace -> %s (open in https://ui.perfetto.dev or chrome://tracing)\n", o.label().c_str(), o.trace.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: warning: no trace written: %s (the output is complete)\n", o.label().c_str(), e.what());
  }
}

void print_banner(const InferenceOptions& o, const Job& job, const transport::UcxChannel& ch, std::size_t todo) {
  std::set<std::string> hosts;
  for (std::uint32_t r = 0; r < ch.size(); ++r) hosts.insert(ch.hostname_of(r));
  double total_cost = 0;
  for (const auto& s : job.stages) total_cost += s.cost;
  const unsigned S = job.layout.stages, R = job.layout.replicas;
  std::fprintf(stderr, "%s: %u stage%s x %u replica%s on %s; %zu layers (width %zu -> %zu); %zu micro-batches of %zu rows; %s\n",
               o.label().c_str(), S, S > 1 ? "s" : "", R, R > 1 ? "s" : "", common::join({hosts.begin(), hosts.end()}, ",").c_str(),
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
    std::fprintf(stderr, "%s: resuming: %zu of %zu micro-batches already done, %zu to go\n", o.label().c_str(),
                 job.all.size() - todo, job.all.size(), todo);
  std::fflush(stderr);
}

std::vector<RankSummary> gather_summaries(transport::UcxChannel& ch, const Job& job, const ComputeClock& busy, CutShares cut) {
  std::vector<RankSummary> all(ch.size());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const RankSummary mine{busy.seconds(), cut, static_cast<std::uint64_t>(usage.ru_maxrss) * 1024,
                         job.model.graph ? resident_constant_bytes(*job.model.graph) : 0};
  transport::Collectives(ch).allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
  return all;
}

nlohmann::json summarize_run(const InferenceOptions& o, const Job& job, OutputSink& sink, const std::vector<MicroBatch>& todo,
                             const std::vector<RankSummary>& ranks, std::vector<std::size_t> per_replica, std::uint32_t size) {
  sink.line();
  double seconds = sink.elapsed();
  double rate = static_cast<double>(sink.rows_this_run()) / std::max(seconds, 1e-9);
  std::fprintf(stderr, "%s: done: %zu rows in %.2f s (%.0f rows/s) -> %s\n", o.label().c_str(), sink.rows_this_run(), seconds, rate,
               o.output.c_str());
  std::vector<double> busy;  // every rank's seconds computing
  for (const auto& r : ranks) busy.push_back(r.busy_seconds);
  if (busy.size() > 1)  // where a stage is short of 100%, it waited: a slower stage, transfers, the output
    std::fprintf(stderr, "%s: computing: %s of the run\n", o.label().c_str(), busy_line(job.layout, busy, seconds).c_str());
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
    std::fprintf(stderr, "%s: at the cut of stages %zu and %zu: %s\n", o.label().c_str(), k, k + 1, common::join(moved, "; ").c_str());
  }
  // Stages on nodes of unequal speed (or given a lopsided --stage-layers): say which split evens them out.
  auto advice = faster_split(job.model, stages_as_run(job, shares), stage_busy(job.layout, busy));
  if (advice) {
    std::vector<std::string> counts;
    for (std::size_t n : advice->layers_per_stage) counts.push_back(std::to_string(n));
    std::fprintf(stderr, "%s: stage %zu held the others back: at the speeds the stages showed, --stage-layers %s "
                 "would even them out (about %.0f%% off its time)\n", o.label().c_str(), advice->slowest, common::join(counts, ",").c_str(),
                 100 * advice->gain);
  }
  nlohmann::json summary = {{"name", o.name}, {"ranks", size}, {"stages", job.layout.stages}, {"replicas", job.layout.replicas},
                            {"micro_batches", job.all.size()}, {"micro_batch_rows", o.micro_batch}, {"rows", job.input.rows},
                            {"rows_this_run", sink.rows_this_run()}, {"seconds", seconds}, {"rows_per_second", rate},
                            {"output", o.output}, {"busy_seconds", busy}};
  std::vector<std::uint64_t> peaks, weights;
  std::vector<std::string> memory;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    peaks.push_back(ranks[r].peak_rss_bytes), weights.push_back(ranks[r].weight_bytes);
    memory.push_back("rank " + std::to_string(r) + " " + std::to_string(ranks[r].peak_rss_bytes >> 20) + " MB" +
                     (job.model.graph ? " (" + std::to_string(ranks[r].weight_bytes >> 20) + " MB of weights)" : ""));
  }
  std::fprintf(stderr, "%s: peak memory: %s\n", o.label().c_str(), common::join(memory, ", ").c_str());
  summary["peak_rss_bytes"] = peaks;  // per rank, at the end of its computing
  if (job.model.graph) summary["weight_bytes"] = weights;
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
  return summary;
}

// --verify: the whole model on this process over the same micro-batches, compared with what was written:
// on the GPU the writer used when the stages ran on GPUs (bit-identical expected on the same GPU model),
// and then also against the CPU, whose error is reported and held to --verify-tolerance when one is set.
int verify_output(const InferenceOptions& o, const Job& job, double rate, bool whole_run, std::uint32_t ranks, nlohmann::json& summary) {
  try {
    // A job mixing CPU and GPU stages matches neither exactly: it is compared with the CPU, within
    // --verify-tolerance (which cnet-run requires for it).
    const int reference = mixed_devices(o.stage_devices) ? -1 : job.gpu;
    auto single = run_single_process(o.model, o.input, o.micro_batch, reference, o.inputs);
    SafetensorsFile produced(o.tensor_output());
    std::vector<float> storage;
    auto written = produced.floats("output", storage);
    Verdict v = compare(written, single.output, job.model.output_width());
    double single_rate = static_cast<double>(job.input.rows) / std::max(single.seconds, 1e-9);
    const char* one = reference >= 0 ? "one process running the whole model on this GPU" : "one process running the whole model";
    int code = kOk;
    if (v.identical) {
      std::fprintf(stderr, "%s: verify: bit-identical to %s (%zu rows)\n", o.label().c_str(), one, job.input.rows);
    } else {
      std::fprintf(stderr, "%s: verify: %zu of %zu values differ from %s (first in row %zu); max abs error %.3g, max rel error %.3g\n",
                   o.label().c_str(), v.differing, single.output.size(), one, v.first_row, v.max_abs, v.max_rel);
      if (o.verify_tolerance == 0 || !(v.max_rel <= o.verify_tolerance)) code = kVerifyMismatch;
    }
    if (whole_run)  // a resumed run timed only part of the work
      std::fprintf(stderr, "%s: throughput: %.0f rows/s on %u ranks vs %.0f rows/s on %s: %.2fx\n", o.label().c_str(), rate, ranks,
                   single_rate, reference >= 0 ? "one process on this GPU" : "one process", rate / single_rate);
    summary["verify"] = {{"identical", v.identical}, {"differing_values", v.differing}, {"max_abs_error", v.max_abs},
                         {"max_rel_error", v.max_rel}, {"single_process_rows_per_second", single_rate},
                         {"single_process_seconds", single.seconds}};
    if (reference >= 0) {
      auto cpu = run_single_process(o.model, o.input, o.micro_batch, -1, o.inputs);
      Verdict c = compare(written, cpu.output, job.model.output_width());
      double cpu_rate = static_cast<double>(job.input.rows) / std::max(cpu.seconds, 1e-9);
      bool within = o.verify_tolerance == 0 || c.max_rel <= o.verify_tolerance;
      std::fprintf(stderr, "%s: verify: against the CPU path: max abs error %.3g, max rel error %.3g%s; CPU %.0f rows/s\n",
                   o.label().c_str(), c.max_abs, c.max_rel,
                   o.verify_tolerance == 0 ? " (informational: no --verify-tolerance)" : (within ? " (within --verify-tolerance)" : " (OVER --verify-tolerance)"),
                   cpu_rate);
      if (!within) code = kVerifyMismatch;
      summary["verify"]["cpu"] = {{"max_abs_error", c.max_abs}, {"max_rel_error", c.max_rel}, {"rows_per_second", cpu_rate}};
    }
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: verify failed: %s\n", o.label().c_str(), e.what());
    return kVerifyMismatch;
  }
}

void write_predictions_of_run(const InferenceOptions& o, const Job& job, const PredictionOptions& predictions, nlohmann::json& summary) {
  const std::string tensor = o.tensor_output();
  std::vector<float> storage;
  SafetensorsFile logits(tensor);
  auto rows = logits.floats("output", storage);
  write_predictions(o.output, rows, job.model.output_width(), job.input.names, predictions);
  for (const auto& why : job.input.skipped) std::fprintf(stderr, "%s: left out (--skip-bad-inputs): %s\n", o.label().c_str(), why.c_str());
  std::fprintf(stderr, "%s: predictions: %zu %s, top %zu each -> %s%s\n", o.label().c_str(), job.input.rows,
               job.input.names.empty() ? "rows" : "images", std::min(predictions.top_k, job.model.output_width()), o.output.c_str(),
               o.output_tensor.empty() ? "" : (" (output tensor: " + o.output_tensor + ")").c_str());
  summary["predictions"] = o.output;
  summary["skipped_inputs"] = job.input.skipped;
  if (o.output_tensor.empty()) {  // the tensor and its progress go together: a rerun starts afresh
    std::error_code ec;
    std::filesystem::remove(tensor, ec);
    std::filesystem::remove(tensor + ".progress", ec);
  }
}

}  // namespace cnet::inference
