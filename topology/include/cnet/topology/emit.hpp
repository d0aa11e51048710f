#pragma once
// Emitters: one NodeTopology in the formats Slurm, NCCL, tools and humans read.

#include <string>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

constexpr const char* kJsonSchema = "cnet.topology/v2";

std::string to_json(const NodeTopology& topo);           // stable, versioned (topology/README.md)
NodeTopology from_json(const std::string& text);         // the inverse; throws TopologyError
std::string to_gres_conf(const NodeTopology& topo);      // gres.conf lines: Name=gpu ..., Name=rdma ...
std::string to_node_features(const NodeTopology& topo);  // slurm.conf NodeName fragment with Gres= and Features=
std::string to_nccl_xml(const NodeTopology& topo);       // NCCL_TOPO_FILE format
std::string to_matrix(const NodeTopology& topo);         // like `nvidia-smi topo -m`, plus NIC pairing
// Graphviz DOT: packages, NUMA nodes, the PCIe tree, GPUs, NICs, the GPU<->NIC pairing and its path
// classes, NVLinks, DOWN ports and unknowns marked (render_svg.hpp draws it).
std::string to_dot(const NodeTopology& topo);

}  // namespace cnet::topology
