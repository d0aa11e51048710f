#include "cnet/inference/gpu_stage.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <utility>

namespace cnet::inference {
namespace {

using ErrorText = std::array<char, 512>;

int dtype_code(const SafetensorsFile& f, const std::string& name) {
  const std::string& d = f.tensor(name).dtype;
  if (d == "F16") return CNET_CUDA_F16;
  if (d == "BF16") return CNET_CUDA_BF16;
  return CNET_CUDA_F32;
}

int kind_code(LayerKind k) {
  switch (k) {
    case LayerKind::linear: return CNET_CUDA_LINEAR;
    case LayerKind::relu: return CNET_CUDA_RELU;
    case LayerKind::gelu: return CNET_CUDA_GELU;
    case LayerKind::softmax: return CNET_CUDA_SOFTMAX;
    case LayerKind::layernorm: return CNET_CUDA_LAYERNORM;
    case LayerKind::residual_mlp: return CNET_CUDA_RESIDUAL_MLP;
    case LayerKind::graph_segment: break;  // open_stage refuses graph models on a GPU before this
  }
  return -1;
}

}  // namespace

std::string CudaStageModule::module_path() {
  if (const char* p = std::getenv("CNET_CUDA_STAGE_MODULE"); p && *p) return p;
#ifdef CNET_CUDA_STAGE_MODULE_RELPATH
  std::error_code ec;  // beside the running tool: the same relative place in the build and installed
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string() + "/" CNET_CUDA_STAGE_MODULE_RELPATH;
#else
  return {};
#endif
}

const CudaStageModule& CudaStageModule::load() {
  // Loaded once; a failure is remembered so every caller gets the same message.
  static const auto loaded = []() -> std::pair<CudaStageModule, std::string> {
    CudaStageModule m;
    std::string path = module_path();
    if (path.empty())
      return {m, "this cnet-run was built without CUDA (CUDA, cuBLAS and NCCL were not found at build time): rebuild with "
                 "-DCNET_WITH_CUDA=ON on a machine with the CUDA toolkit, or run with --gpu-per-stage 0"};
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h)
      return {m, std::string("cannot load the CUDA stage module: ") + dlerror() +
                     " (is the CUDA runtime's lib64 on LD_LIBRARY_PATH? or run with --gpu-per-stage 0)"};
    auto entry = reinterpret_cast<const cnet_cuda_stage_api* (*)()>(dlsym(h, "cnet_cuda_stage_api_v1"));
    if (!entry || !entry() || entry()->abi_version != CNET_CUDA_STAGE_ABI_VERSION)
      return {m, path + " is not a CUDA stage module of this cnet version (reinstall cnet)"};
    m.api_ = entry();
    ErrorText err{};
    if (m.api_->device_count(&m.devices_, err.data(), err.size()) != 0)
      return {m, std::string("no CUDA device found (") + err.data() + "); run with --gpu-per-stage 0 on CPU-only nodes"};
    if (m.devices_ == 0) return {m, "no CUDA device found (the runtime sees 0 devices); run with --gpu-per-stage 0 on CPU-only nodes"};
    return {m, {}};
  }();
  if (!loaded.second.empty()) throw GpuUnavailable(loaded.second);
  return loaded.first;
}

cnet_cuda_device CudaStageModule::device(int index) const {
  cnet_cuda_device info{};
  ErrorText err{};
  if (api_->device_info(index, &info, err.data(), err.size()) != 0)
    throw GpuUnavailable("CUDA device " + std::to_string(index) + ": " + err.data());
  return info;
}

double CudaStageModule::gemm_tflops(int device, std::size_t n) const {
  double t = 0;
  ErrorText err{};
  if (api_->gemm_tflops(device, n, &t, err.data(), err.size()) != 0) throw GpuUnavailable(std::string("GEMM on the GPU: ") + err.data());
  return t;
}

bool CudaStageModule::nccl_available(std::string& why) const {
  ErrorText err{};
  if (api_->nccl_available(err.data(), err.size()) == 0) return true;
  why = err.data();
  return false;
}

NcclComm::NcclComm(const CudaStageModule& cuda, int device, const Id& id, int rank) : cuda_(cuda) {
  ErrorText err{};
  comm_ = cuda.api().nccl_connect(device, id.data(), 2, rank, err.data(), err.size());
  if (!comm_) throw GpuUnavailable(std::string("NCCL between GPU stages: ") + err.data());
}

NcclPairs connect_nccl_pairs(transport::Bootstrap& boot, const StageLinks& links, int device) {
  const std::uint32_t rank = boot.placement().rank;
  NcclComm::Id mine{};
  ErrorText err{};
  // A sender that cannot make an id posts nothing, so its receiver fails here too instead of waiting.
  bool made = links.nccl_to_next && CudaStageModule::load().api().nccl_unique_id(mine.data(), err.data(), err.size()) == 0;
  auto ids = boot.allgather_values<unsigned char>("cnet.run.nccl_ids", made ? std::span<const unsigned char>(mine) : std::span<const unsigned char>());
  if (links.nccl_to_next && !made) throw GpuUnavailable(std::string("NCCL between GPU stages: ") + err.data());
  NcclPairs pairs;
  if (links.nccl_from_prev) {
    const auto& theirs = ids.at(rank - 1);
    if (theirs.size() != NcclComm::Id{}.size()) throw GpuUnavailable("NCCL between GPU stages: the previous stage could not make an NCCL id");
    NcclComm::Id id{};
    std::copy(theirs.begin(), theirs.end(), id.begin());
    pairs.from_prev = std::make_unique<NcclComm>(CudaStageModule::load(), device, id, 1);
  }
  if (links.nccl_to_next) pairs.to_next = std::make_unique<NcclComm>(CudaStageModule::load(), device, mine, 0);
  return pairs;
}

NcclComm::~NcclComm() {
  // A failed stage ends the process through the bootstrap's abort, never through here: close normally.
  if (comm_) cuda_.api().nccl_close(comm_, 0);
}

void GpuStageForward::link(NcclComm* from_prev, NcclComm* to_next) {
  ErrorText err{};
  if (cuda_.api().stage_link(stage_, from_prev ? from_prev->handle() : nullptr, to_next ? to_next->handle() : nullptr, err.data(),
                             err.size()) != 0)
    throw GpuUnavailable(device() + ": " + err.data());
  from_prev_ = from_prev != nullptr, to_next_ = to_next != nullptr;
}

GpuStageForward::GpuStageForward(const CudaStageModule& cuda, int device, const SafetensorsFile& weights, const ModelSpec& model,
                                 unsigned stage_index, const StageRange& stage, std::size_t micro_batch)
    : cuda_(cuda), index_(device) {
  if (stage.first >= stage.last || stage.last > model.layers.size()) throw FormatError("stage layer range is empty or outside the model");
  info_ = cuda.device(device);
  GpuBuffers buffers = plan_buffers(model, stage, micro_batch);
  check_fits(stage_index, stage, stage_memory(weights, model, stage, buffers), "GPU " + std::to_string(device) + " (" + info_.name + ")",
             info_.free_bytes);
  std::vector<std::vector<float>> small;
  small.reserve(6 * (stage.last - stage.first));
  auto f32 = [&](const std::string& name) -> const float* {
    if (name.empty()) return nullptr;
    small.emplace_back();
    auto s = weights.floats(name, small.back());
    return s.data();
  };
  auto raw = [&](const std::string& name) -> const void* { return name.empty() ? nullptr : weights.raw(name).data(); };
  std::vector<cnet_cuda_layer> layers;
  for (std::size_t i = stage.first; i < stage.last; ++i) {
    const LayerSpec& l = model.layers[i];
    if (std::max({l.in, l.out, l.hidden, micro_batch}) > static_cast<std::size_t>(INT_MAX))
      throw FormatError("layer " + std::to_string(i) + " (" + l.describe() + ") is wider than cuBLAS can address");
    cnet_cuda_layer c{};
    c.kind = kind_code(l.kind);
    c.activation = kind_code(l.activation);
    c.in = l.in, c.out = l.out, c.hidden = l.hidden, c.eps = l.eps;
    c.weight_dtype = CNET_CUDA_F32;
    if (l.kind == LayerKind::linear) {
      c.weight_dtype = dtype_code(weights, l.weight);
      c.w = raw(l.weight), c.b = f32(l.bias);
    } else if (l.kind == LayerKind::layernorm) {
      c.gamma = f32(l.weight), c.beta = f32(l.bias);
    } else if (l.kind == LayerKind::residual_mlp) {
      c.weight_dtype = dtype_code(weights, l.fc1_weight);
      if (dtype_code(weights, l.fc2_weight) != c.weight_dtype)  // one 16-bit scratch type per layer
        throw FormatError("layer " + std::to_string(i) + ": fc1 and fc2 weights have different dtypes; the GPU path needs them alike");
      c.w = raw(l.fc1_weight), c.b = f32(l.fc1_bias), c.w2 = raw(l.fc2_weight), c.b2 = f32(l.fc2_bias);
      c.gamma = f32(l.weight), c.beta = f32(l.bias);
    }
    layers.push_back(c);
  }
  in_ = model.layers[stage.first].in;
  out_ = model.layers[stage.last - 1].out;
  cnet_cuda_buffers b{buffers.max_rows, buffers.max_width, buffers.max_hidden, buffers.workspace_bytes};
  ErrorText err{};
  stage_ = cuda.api().stage_create(device, layers.data(), layers.size(), &b, err.data(), err.size());
  if (!stage_) throw GpuUnavailable("setting up stage " + std::to_string(stage_index) + " on GPU " + std::to_string(device) + ": " + err.data());
}

GpuStageForward::~GpuStageForward() {
  if (stage_) cuda_.api().stage_destroy(stage_);
}

std::string GpuStageForward::device() const { return "GPU " + std::to_string(index_) + " (" + info_.name + "), cuBLAS"; }

void GpuStageForward::wait_for(int (*done)(void*, char*, std::size_t), const char* what, const std::function<void()>& progress) {
  ErrorText err{};
  const auto deadline = std::chrono::steady_clock::now() + stall_timeout_;
  int rc;
  while ((rc = done(stage_, err.data(), err.size())) == 0) {
    if (progress) progress();
    else std::this_thread::yield();
    if (std::chrono::steady_clock::now() > deadline)
      throw GpuUnavailable(device() + ": " + what + " did not finish within " + std::to_string(stall_timeout_.count()) +
                           " ms (an NCCL neighbour stalled or died, or the GPU hung)");
  }
  if (rc < 0) throw GpuUnavailable(device() + ": " + err.data());
}

void GpuStageForward::forward(std::span<const float> in, std::size_t rows, std::vector<float>& out, const std::function<void()>& progress) {
  const cnet_cuda_stage_api& api = cuda_.api();
  ErrorText err{};
  if (!from_prev_ && in.size() < rows * in_) throw FormatError("a micro-batch is shorter than its rows");
  const std::size_t next = std::exchange(next_rows_, 0);
  if (api.stage_start(stage_, from_prev_ ? nullptr : in.data(), rows, next, err.data(), err.size()) != 0)
    throw GpuUnavailable(device() + ": " + err.data());
  wait_for(api.stage_poll, "a micro-batch", progress);
  out.resize(to_next_ ? 0 : rows * out_);
  if (api.stage_result(stage_, out.data(), err.data(), err.size()) != 0) throw GpuUnavailable(device() + ": " + err.data());
}

void GpuStageForward::finish(const std::function<void()>& progress) { wait_for(cuda_.api().stage_flush, "the last transfer", progress); }

std::unique_ptr<StageCompute> open_stage(const ComputeDevice& where, const SafetensorsFile* weights, const ModelSpec& model,
                                         unsigned stage_index, const StageRange& stage, std::size_t micro_batch) {
  if (!where.gpu) return std::make_unique<StageForward>(weights, model, stage.first, stage.last);
  if (model.graph) throw FormatError("GPU stages run layer lists only so far; run an ONNX model's stages on the CPU (no --gpu-per-stage)");
  return std::make_unique<GpuStageForward>(CudaStageModule::load(), where.cuda_device, *weights, model, stage_index, stage, micro_batch);
}

}  // namespace cnet::inference
