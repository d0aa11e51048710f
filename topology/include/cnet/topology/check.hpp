#pragma once
// Link sanity checks on one node: the problems that make a job slow or hang before it starts.

#include <string>
#include <vector>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

struct CheckOptions {
  unsigned min_rate_gbps = 0;     // flag NICs negotiated below this (0: only flag degraded IB width)
  unsigned expected_ib_lanes = 4; // IB ports run 4X unless the site says otherwise
};

struct Finding {
  std::string subject;  // "mlx5_0", "GPU2", "ib"
  std::string problem;  // what is wrong, with the values seen
  std::string fix;      // what to do about it
  // A link fault (port down, degraded, mismatched) that breaks or slows jobs now, as opposed to a
  // placement property of the machine; a job preflight (--cnet-check) fails only on these.
  bool link_fault = true;
};

std::vector<Finding> check_links(const NodeTopology& topo, const CheckOptions& options = {});

}  // namespace cnet::topology
