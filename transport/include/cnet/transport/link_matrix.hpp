#pragma once
// Every pair of a job's nodes measured with the quick link test: the N x N bandwidth and P99 matrix
// behind `cnet-doctor --job --heatmap` and `cnet-perf matrix`, which pairs are slow, and which nodes
// are behind them. Pairs run one at a time: pairs in parallel would share switch ports and CPUs and
// skew each other, and a slow pair must be the link's fault, not the test's.

#include <cstdint>
#include <string>
#include <vector>

#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/link_test.hpp"
#include "cnet/transport/perf_report.hpp"
#include "cnet/transport/ucx_channel.hpp"

namespace cnet::transport {

struct LinkMatrix {
  std::vector<std::string> hosts;
  // [i][j] for i != j, the same both ways (measured once); 0 on the diagonal.
  std::vector<std::vector<double>> gbytes, p99_us;
  // The baseline's bandwidth for each pair ([i][j], 0: none saved), when one is compared.
  std::vector<std::vector<double>> baseline_gbytes;
  // Each pair's reports (the leader's), for --save-baseline.
  std::vector<PerfReport> reports;
};

// Collective over the channel: every rank calls it with the same `leaders` (one rank per node, in the
// order the matrix lists the hosts); on the first of them the matrix is complete, elsewhere empty.
LinkMatrix measure_link_matrix(UcxChannel& channel, Bootstrap& boot, const std::vector<std::uint32_t>& leaders, const LinkTestOptions& options);

// Fills baseline_gbytes from a saved baseline (reports for host pairs, either order).
void compare_with_baseline(LinkMatrix& matrix, const std::vector<PerfReport>& baseline);

struct MatrixFindings {
  std::vector<std::pair<std::size_t, std::size_t>> slow_pairs;  // i < j
  std::vector<std::size_t> suspect_nodes;                       // in most of their pairs' slow ones
  std::vector<std::string> lines;                               // one per slow pair and suspect node, for people
};
// A pair is slow when its bandwidth is below (1 - tolerance) of the job's typical pair (the 75th
// percentile; or of its baseline, when one is saved), or its P99 more than twice the typical P99 (25th) and 5 us over it. A node is behind them when
// more than half of its pairs are slow: with two nodes both are, with more the odd one out.
MatrixFindings find_slow_pairs(const LinkMatrix& matrix, double tolerance);

std::string to_json(const LinkMatrix& matrix, const MatrixFindings& findings);  // hosts, gbytes, p99_us, slow pairs, suspects
// Two heatmaps side by side (bandwidth, P99), slow pairs outlined, suspect nodes' names in red, the
// drop against the baseline in each cell that has one. A grid needs no layout engine: plain SVG.
std::string heatmap_svg(const LinkMatrix& matrix, const MatrixFindings& findings, const std::string& title);

}  // namespace cnet::transport
