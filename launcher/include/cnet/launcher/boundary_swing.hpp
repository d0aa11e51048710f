#pragma once
// Where two CPU stages meet, the downstream stage's first layer (the "swing layer") may be computed by
// either one: the upstream stage decides per micro-batch and says so in the activation it sends. Whole
// layers cannot even out stages whose nodes differ by less than a layer's worth of speed (two vCPUs
// a few percent apart, one layer 6% of the model); computing the swing layer upstream for the right
// micro-batches does. The layer gives the same bits wherever it runs, so the output does not change.
// This is the upstream's bookkeeping: both sides' computing time so far, and the choice.

#include <array>
#include <cstddef>
#include <deque>
#include <optional>

#include "cnet/launcher/schedule.hpp"

namespace cnet::launcher {

// What a stage measured computing one micro-batch, as it reports it to the stage before it: its
// seconds per row on its own layers and, when it computed it, on the swing layer it shares with that
// stage.
struct SwingReport {
  double own_per_row = 0;
  double swing_per_row = -1;  // < 0: the other stage computed the swing layer
  // How long this micro-batch's input had been there when the stage began it, as far as it saw
  // (between its layers); < 0: how long the stage waited for it.
  double slack = 0;
};

class BoundarySwing {
 public:
  // Whether the upstream stage computes the swing layer of the next micro-batch (of `rows` rows): the
  // choice that leaves the two stages' computing time so far closest, counting the micro-batches the
  // downstream stage has not reported yet at its recent speed. So the two stay within about one swing
  // layer of each other over the run: the pipeline waits on neither. Until the downstream stage has
  // reported, the split stays as planned (the layer downstream).
  bool take_next(std::size_t rows);
  // The upstream's own measurement of each micro-batch, after computing it; the downstream stage's
  // reports, in micro-batch order.
  void upstream_measured(const SwingReport& r, std::size_t rows);
  void downstream_measured(const SwingReport& r, std::size_t rows);

  std::size_t taken() const { return taken_; }
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
    Recent own, swing;  // seconds per row
    void add(const SwingReport& r);
  };
  Side up_, down_;
  double up_total_ = 0, down_total_ = 0;  // seconds computed, the downstream's as reported
  double last_slack_ = 0;                 // the downstream's latest report's
  struct Pending {
    std::size_t rows;
    bool taken;
  };
  std::deque<Pending> unreported_;
  std::size_t taken_ = 0, decided_ = 0;
};

// Whether the cut after stage `upstream` may swing: the downstream stage keeps at least one layer of its
// own, and its first layer keeps the activation's width, so the message's size does not depend on which
// stage computed it.
bool boundary_can_swing(const ModelSpec& model, const std::vector<StageRange>& stages, std::size_t upstream);

}  // namespace cnet::launcher
