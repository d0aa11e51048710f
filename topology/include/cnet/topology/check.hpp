#pragma once
// Link sanity checks on one node: the problems that make a job slow or hang before it starts.

#include <string>
#include <vector>

#include "cnet/topology/model.hpp"
#include "cnet/topology/nic_selection.hpp"

namespace cnet::topology {

struct CheckOptions {
  unsigned min_rate_gbps = 0;     // flag NICs negotiated below this (0: only flag degraded IB width)
  unsigned expected_ib_lanes = 4; // IB ports run 4X unless the site says otherwise
  // The NICs jobs use, whose MTUs must agree within each kind. Empty: the node's RDMA NICs, or with
  // tcp_fabric its Ethernet NICs; a management port beside them is not compared with the fabric.
  NicSelection fabric;
  bool tcp_fabric = false;
};

// What a finding is about, for scripts: a link fault breaks or slows jobs now (a job preflight fails
// only on these); placement is a property of the machine; unknown means it could not be checked.
enum class FindingKind { link_fault, placement, unknown };
const char* to_string(FindingKind kind);

struct Finding {
  std::string subject;  // "mlx5_0", "GPU2", "ib"
  std::string problem;  // what is wrong, with the values seen
  std::string fix;      // what to do about it
  FindingKind kind = FindingKind::link_fault;
  std::string aspect;   // "state", "width", "rate", "mtu", "pairing"
};

std::vector<Finding> check_links(const NodeTopology& topo, const CheckOptions& options = {});

}  // namespace cnet::topology
