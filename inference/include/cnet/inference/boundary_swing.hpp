#pragma once
// Where two CPU stages meet, the two layers beside the cut (the upstream stage's last, the downstream
// stage's first) may each be computed by either stage: the upstream decides per micro-batch whether to
// stop one layer early (give), at the cut (keep) or one layer late (take), and says so in the
// activation it sends. Whole layers cannot even out stages whose nodes differ by less than a layer's
// worth of speed (two vCPUs a few percent apart, one layer 6% of the model); moving a layer across for
// the right micro-batches does. A layer gives the same bits wherever it runs, so the output does not
// change. This is the upstream's bookkeeping: both sides' computing time so far, and the choice.

#include <array>
#include <cstddef>
#include <deque>
#include <optional>

#include "cnet/inference/schedule.hpp"

namespace cnet::inference {

// What the upstream stage does with the layers beside the cut for one micro-batch.
enum class CutMove : int { give = -1, keep = 0, take = 1 };

// What a stage measured computing one micro-batch, in seconds per row: on the layers it computed other
// than the two beside the cut, and on each of those where it computed it. The downstream stage reports
// it to the upstream one, with how long the micro-batch's input had been waiting for it.
struct SwingReport {
  double own_per_row = 0;
  double last_per_row = -1;   // the upstream stage's last layer; < 0: not computed by this stage
  double first_per_row = -1;  // the downstream stage's first layer; < 0: not computed by this stage
  // How long this micro-batch's input had been there when the stage began it, as far as it saw
  // (between its layers); < 0: how long the stage waited for it.
  double slack = 0;
};

// Which ways a cut may move: give where the upstream's last layer keeps the width and the upstream
// keeps a layer that never moves; take the same for the downstream's first layer. The width kept
// means the message's size does not depend on which stage computed the layer.
struct CutSwing {
  bool give = false, take = false;
  bool any() const { return give || take; }
};
// For each cut (after stage k), which ways it may move.
std::vector<CutSwing> plan_cut_swings(const ModelSpec& model, const std::vector<StageRange>& stages);

class BoundarySwing {
 public:
  explicit BoundarySwing(CutSwing may = {true, true}) : may_(may) {}
  // What the upstream stage does with the next micro-batch (of `rows` rows): the move that leaves the
  // two stages' computing time so far closest, counting the micro-batches the downstream stage has not
  // reported yet at its recent speed, so the two stay within a layer or two over the run and the
  // pipeline waits on neither. A layer is taken only while the downstream's input waits for it at least
  // half as long as the layer takes: in lockstep a layer taken upstream only delays the micro-batch
  // downstream by what it saves there. (Giving a layer sends the micro-batch sooner, so it never makes
  // the downstream wait.) Where the cut moves both ways, the first micro-batch gives its layer and the
  // last (`last`) takes one back, so filling and draining the pipeline each take a layer less; in
  // between, until the downstream stage has reported, the split stays as planned.
  CutMove next(std::size_t rows, bool last = false);
  // The upstream's own measurement of each micro-batch, after computing it; the downstream stage's
  // reports, in micro-batch order.
  void upstream_measured(const SwingReport& r, std::size_t rows);
  void downstream_measured(const SwingReport& r, std::size_t rows);

  std::size_t taken() const { return taken_; }
  std::size_t given() const { return given_; }
  std::size_t decided() const { return decided_; }
  double upstream_seconds() const { return up_total_; }
  double downstream_seconds() const { return down_total_; }

 private:
  // The median of the last few values: one micro-batch descheduled for a moment does not move the
  // speed it predicts the unreported ones at.
  class Recent {
   public:
    void add(double x);
    std::optional<double> median() const;

   private:
    std::array<double, 7> last_{};
    std::size_t count_ = 0;
  };
  struct Side {
    Recent own, last, first;  // seconds per row
    void add(const SwingReport& r);
  };
  CutSwing may_;
  Side up_, down_;
  double up_total_ = 0, down_total_ = 0;  // seconds computed, the downstream's as reported
  double last_slack_ = 0;                 // the downstream's latest report's
  std::size_t owed_rows_ = 0;             // rows of the first micro-batch, whose given layer the last takes back
  struct Pending {
    std::size_t rows;
    CutMove move;
  };
  std::deque<Pending> unreported_;
  std::size_t taken_ = 0, given_ = 0, decided_ = 0;
};

}  // namespace cnet::inference
