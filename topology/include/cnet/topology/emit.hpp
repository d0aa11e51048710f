#pragma once
// Emitters: one NodeTopology in the formats Slurm, NCCL, tools and humans read.

#include <cstdint>
#include <string>
#include <vector>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

constexpr const char* kJsonSchema = "cnet.topology/v1";

std::string to_json(const NodeTopology& topo);           // stable, versioned (topology/README.md)
NodeTopology from_json(const std::string& text);         // the inverse; throws TopologyError
std::string to_gres_conf(const NodeTopology& topo);      // gres.conf lines: Name=gpu ..., Name=rdma ...
std::string to_node_features(const NodeTopology& topo);  // slurm.conf NodeName fragment with Gres= and Features=
std::string to_nccl_xml(const NodeTopology& topo);       // NCCL_TOPO_FILE format
std::string to_matrix(const NodeTopology& topo);         // like `nvidia-smi topo -m`, plus NIC pairing

// Shared vocabulary, also used by templates and checks.
std::string gres_type(const std::string& model);       // "Tesla V100-SXM3-32GB" -> "tesla_v100-sxm3-32gb"
std::string memory_class(std::uint64_t bytes);           // 34089205760 -> "gpumem32g"; "" when unknown
std::string fabric_feature(const Nic& nic);              // "ib100", "roce200", "eth10", "ib" (rate unknown)
std::string compress_ranges(const std::vector<unsigned>& values);  // {0,1,2,5} -> "0-2,5"

}  // namespace cnet::topology
