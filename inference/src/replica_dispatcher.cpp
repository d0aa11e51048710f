// Data parallel with one stage per replica: the writer hands micro-batches out as the replicas ask
// (hand_out_work), and every other replica asks for its next one while it computes (ask_for_work).
#include <array>

#include "job.hpp"
#include "rows_from_ranks.hpp"

namespace cnet::inference {
namespace {
using transport::UcxChannel;

// A replica's ask carries nothing; the grant is an index into the job's to-do list, or kNoMore.
constexpr std::uint32_t kAskTag = 0xfffffffdu, kGrantTag = 0xfffffffeu, kNoMore = 0xffffffffu;

std::span<const float> input_of(const Job& job, const MicroBatch& mb) {
  const std::size_t width = job.forward->input_width();
  return job.input.data.subspan(mb.first_row * width, mb.rows * width);
}

// A replica other than the writer: ask, compute what is granted, send the rows to the writer, until the
// writer says there is no more.
void ask_for_work(UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo, ComputeClock& busy) {
  const std::uint32_t writer = job.layout.writer();
  std::vector<float> result;
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
      job.forward->forward(input_of(job, mb), mb.rows, result, [&] {
        ch.progress();
        ask_when_due();
      });
    });
    job.input.release(mb.first_row, mb.rows, job.forward->input_width());
    if (!answer) answer = ask();
    last = Clock::now() - started;
    if (sending[j % 2]) ch.wait(*sending[j % 2]);  // the send from two micro-batches ago has left this buffer
    outbox[j % 2].swap(result);
    sending[j % 2] = ch.send(writer, output_tag(mb.index), bytes(outbox[j % 2]));
  }
  for (auto& r : sending)
    if (r) ch.wait(*r);
}

// The writer: its own micro-batches, and between its layers the others' asks and finished rows.
// Returns how many micro-batches each replica computed.
std::vector<std::size_t> hand_out_work(UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo, OutputSink& sink,
                                       ComputeClock& busy) {
  struct Replica {
    std::uint32_t rank;
    std::uint32_t grant = kNoMore;
    std::unique_ptr<UcxChannel::Request> ask, answer;
    bool finished = false;
  };
  const unsigned R = job.layout.replicas;
  std::vector<Replica> others;
  for (unsigned r = 1; r < R; ++r) others.emplace_back().rank = job.layout.rank_of(r, 0);
  std::vector<std::size_t> computed(R, 0);
  RowsFromRanks incoming(ch, sink, job.forward->output_width());
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
      incoming.expect(o.rank, todo[o.grant]);
      o.ask = ch.recv(o.rank, kAskTag, {});
    }
    incoming.take_arrived();
  };
  std::vector<float> result;
  sink.start();
  while (next < todo.size()) {
    const MicroBatch& mb = todo[next++];
    ++computed[0];
    busy.time(mb.index, static_cast<std::uint32_t>(mb.rows), [&] {
      job.forward->forward(input_of(job, mb), mb.rows, result, [&] {
        ch.progress();
        serve();
      });
    });
    job.input.release(mb.first_row, mb.rows, job.forward->input_width());
    sink.put(mb, result);
    serve();
  }
  // Every micro-batch is handed out: answer each replica's last ask, then take the rows still out, with
  // blocking waits, so a replica that died or hung is reported (or timed out) as in the fixed split.
  for (auto& o : others)
    if (!o.finished) {
      ch.wait(*o.ask);
      serve();
    }
  incoming.take_all();
  for (auto& o : others)
    if (o.answer) ch.wait(*o.answer);
  return computed;
}

}  // namespace

std::vector<std::size_t> run_replicas_on_demand(UcxChannel& ch, const Job& job, const std::vector<MicroBatch>& todo, OutputSink* sink,
                                                ComputeClock& busy) {
  const bool writer = ch.rank() == job.layout.writer();
  prime_links(ch, job, false, false, writer);
  if (!writer) {
    ask_for_work(ch, job, todo, busy);
    return {};
  }
  return hand_out_work(ch, job, todo, *sink, busy);
}

}  // namespace cnet::inference
