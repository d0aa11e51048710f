#include "cnet/inference/gpu_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cnet/common/text.hpp"

namespace cnet::inference {

std::uint64_t GpuBuffers::activation_bytes() const {
  const std::uint64_t rows = max_rows;
  return rows * max_width * 4 * (3 + 4) + rows * max_hidden * 4 + rows * std::max(max_width, max_hidden) * 2;
}

GpuBuffers plan_buffers(const ModelSpec& model, const StageRange& stage, std::size_t micro_batch) {
  GpuBuffers b;
  b.max_rows = micro_batch;
  for (std::size_t i = stage.first; i < stage.last; ++i) {
    const LayerSpec& l = model.layers.at(i);
    b.max_width = std::max({b.max_width, l.in, l.out});
    if (l.kind == LayerKind::residual_mlp) b.max_hidden = std::max(b.max_hidden, l.hidden);
  }
  return b;
}

GpuStageMemory stage_memory(const SafetensorsFile& weights, const ModelSpec& model, const StageRange& stage, const GpuBuffers& buffers) {
  GpuStageMemory m;
  auto stored = [&](const std::string& name) -> std::uint64_t {
    if (name.empty()) return 0;
    const TensorInfo& t = weights.tensor(name);
    return t.end - t.begin;
  };
  auto as_f32 = [&](const std::string& name) -> std::uint64_t { return name.empty() ? 0 : weights.tensor(name).elements() * 4; };
  for (std::size_t i = stage.first; i < stage.last; ++i) {
    const LayerSpec& l = model.layers.at(i);
    m.weights += stored(l.kind == LayerKind::residual_mlp ? l.fc1_weight : (l.kind == LayerKind::linear ? l.weight : std::string()));
    m.weights += stored(l.fc2_weight);
    for (const std::string* v : {&l.bias, &l.fc1_bias, &l.fc2_bias}) m.weights += as_f32(*v);
    if (l.kind == LayerKind::layernorm || l.kind == LayerKind::residual_mlp) m.weights += as_f32(l.weight);
  }
  m.activations = buffers.activation_bytes();
  m.workspace = buffers.workspace_bytes;
  return m;
}

void check_fits(unsigned stage_index, const StageRange& stage, const GpuStageMemory& need, const std::string& device,
                std::uint64_t free_bytes) {
  if (need.total() <= free_bytes) return;
  throw GpuPlanError("stage " + std::to_string(stage_index) + " (layers " + std::to_string(stage.first) + "-" +
                     std::to_string(stage.last - 1) + ") needs " + human_bytes(need.total()) + " of GPU memory (weights " +
                     human_bytes(need.weights) + ", activations " + human_bytes(need.activations) + ", cuBLAS workspace " +
                     human_bytes(need.workspace) + ") but " + device + " has " + human_bytes(free_bytes) +
                     " free: use more stages (--num-stages, more ranks) or a smaller --micro-batch");
}

int cuda_device_for_task(int visible, unsigned local_rank) {
  if (visible <= 0) throw GpuPlanError("no CUDA device is visible to this task");
  return static_cast<int>(local_rank % static_cast<unsigned>(visible));
}

ActivationPath choose_activation_path(const StageDevice& from, const StageDevice& to, bool nccl_available) {
  if (from.gpu_uuid.empty() || to.gpu_uuid.empty()) return ActivationPath::host;
  // NCCL cannot connect two ranks on one GPU; staging through the host is the only way there.
  if (from.host == to.host && from.gpu_uuid == to.gpu_uuid) return ActivationPath::host_staged;
  return nccl_available ? ActivationPath::nccl : ActivationPath::host_staged;
}

const char* describe(ActivationPath path) {
  switch (path) {
    case ActivationPath::host: return "host memory over UCX";
    case ActivationPath::host_staged: return "GPU -> pinned host memory -> UCX -> GPU";
    case ActivationPath::nccl: return "GPU to GPU over NCCL";
  }
  return "?";
}

std::string to_text(const RankDevice& d) { return d.device.host + "\n" + d.device.gpu_uuid + "\n" + (d.nccl ? "nccl" : "-"); }

RankDevice rank_device_from_text(const std::string& text) {
  auto a = text.find('\n'), b = a == std::string::npos ? a : text.find('\n', a + 1);
  if (b == std::string::npos) throw GpuPlanError("a rank sent a damaged device description: '" + text.substr(0, 80) + "'");
  return {{text.substr(0, a), text.substr(a + 1, b - a - 1)}, text.substr(b + 1) == "nccl"};
}

StageLinks plan_stage_links(const JobLayout& layout, const std::vector<RankDevice>& ranks, std::uint32_t rank) {
  auto path = [&](std::uint32_t from, std::uint32_t to) {
    return choose_activation_path(ranks.at(from).device, ranks.at(to).device, ranks.at(from).nccl && ranks.at(to).nccl);
  };
  StageLinks links;
  const unsigned stage = layout.stage_of(rank);
  links.nccl_from_prev = stage > 0 && path(rank - 1, rank) == ActivationPath::nccl;
  if (stage + 1 < layout.stages) {
    links.to_next = path(rank, rank + 1);
    links.nccl_to_next = links.to_next == ActivationPath::nccl;
  }
  return links;
}

std::vector<bool> parse_stage_devices(const std::string& list) {
  std::vector<bool> out;
  for (const std::string& word : common::split_fields(list)) {
    if (word != "cpu" && word != "gpu")
      throw GpuPlanError("--stage-devices: '" + word + "' is neither cpu nor gpu (one per stage, in order, e.g. cpu,gpu)");
    out.push_back(word == "gpu");
  }
  return out;
}

bool stage_on_gpu(const std::vector<bool>& devices, unsigned stage, unsigned stages) {
  if (devices.empty()) return false;
  if (devices.size() == 1) return devices[0];
  if (devices.size() != stages)
    throw GpuPlanError("--stage-devices names " + std::to_string(devices.size()) + " stages but the job has " + std::to_string(stages) +
                       ": give one entry per stage (or one for all), or run " + std::to_string(devices.size()) + " stages");
  return devices.at(stage);
}

bool any_gpu(const std::vector<bool>& devices) { return std::find(devices.begin(), devices.end(), true) != devices.end(); }

bool mixed_devices(const std::vector<bool>& devices) {
  return any_gpu(devices) && std::find(devices.begin(), devices.end(), false) != devices.end();
}

std::string human_bytes(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (std::uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  else if (bytes >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= (1u << 10)) std::snprintf(buf, sizeof buf, "%.0f KiB", static_cast<double>(bytes) / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace cnet::inference
