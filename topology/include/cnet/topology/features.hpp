#pragma once
// The node-feature vocabulary cnet writes into slurm.conf (cnet-topo --format features) and reads back
// in templates and the pool table: GPU gres types, GPU memory classes ("gpumem80g") and fabrics
// ("ib200", "roce100", "eth10"). One list of classes and rates, so the writer and the readers agree.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cnet/topology/model.hpp"

namespace cnet::topology {

// Marketed GPU memory sizes in GB; drivers report a little less (V100 32 GB: 32510 MiB).
std::span<const unsigned> gpu_memory_classes_gb();
// The link rates (Gb/s) a fabric of this kind negotiates.
std::span<const unsigned> fabric_rates_gbps(NicKind kind);

// The GPU family admins write as a gres Type: "NVIDIA A100-SXM4-80GB" -> "a100", "Tesla V100-SXM3-32GB"
// -> "v100", "NVIDIA RTX A6000" -> "rtx_a6000". Slurm's NVML autodetect names a GPU by its whole NVML
// name lowercased with spaces as '_' ("nvidia_a100-sxm4-80gb") and takes a configured Type that is a
// substring of it, so both agree. Without a model name: the vendor and PCI device id ("nvidia_20b0").
std::string gres_type(const std::string& model);

std::string memory_class(std::uint64_t bytes);   // 34089205760 -> "gpumem32g" (snapped to a class); "" unknown
std::string memory_class_feature(unsigned gb);   // 80 -> "gpumem80g"
std::optional<unsigned> parse_memory_class(std::string_view feature);  // "gpumem80g" -> 80

std::string fabric_feature(NicKind kind, unsigned rate_gbps);  // "ib200"; "ib" when the rate is unknown (0)
std::string fabric_feature(const Nic& nic);
struct FabricFeature {
  NicKind kind = NicKind::eth;
  unsigned rate_gbps = 0;
};
std::optional<FabricFeature> parse_fabric_feature(std::string_view feature);  // "roce100" -> {roce, 100}

}  // namespace cnet::topology
