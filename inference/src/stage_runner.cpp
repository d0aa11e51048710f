#include <array>
#include <optional>

#include "cnet/inference/swing_reports.hpp"
#include "job.hpp"
#include "rows_from_ranks.hpp"

namespace cnet::inference {
namespace {
using transport::UcxChannel;

// What the stage before did at the cut, from the float that ends its activation.
CutMove arrived_move(float marker) { return marker > 0.5f ? CutMove::take : marker < -0.5f ? CutMove::give : CutMove::keep; }

}  // namespace

// One pipeline stage (of one replica): every scheme but data parallel with one stage per replica.
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
  std::optional<RowsFromRanks> others;
  if (sink) others.emplace(ch, *sink, out_width);
  std::size_t next_other = 0;  // index into todo of the next other replica's micro-batch to post for
  auto post_others = [&](std::size_t rounds) {
    for (; next_other < std::min(todo.size(), rounds * R); ++next_other)
      if (next_other % R != 0)  // not the writer's own
        others->expect(layout.rank_of(static_cast<unsigned>(next_other % R), S - 1), todo[next_other]);
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
      if (j > 0) job.input.release(mine[j - 1].first_row, mine[j - 1].rows, in_width);  // computed and sent
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
      others->take_arrived();
    }
  }
  if (sink) {
    post_others(todo.size());
    others->take_all();
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

}  // namespace cnet::inference
