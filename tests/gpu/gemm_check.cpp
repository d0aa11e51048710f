// gemm_check: cuBLAS F32 GEMM through the CUDA stage module, in the stages' deterministic configuration,
// against the GPU's F32 peak (SMs x 128 FP32 lanes x 2 flops x clock). Needs a GPU; tests/gpu/run.sh.
#include <cstdio>

#include "cnet/inference/gpu_stage.hpp"

int main() {
  try {
    const auto& cuda = cnet::inference::CudaStageModule::load();
    cnet_cuda_device d = cuda.device(0);
    double peak = d.multiprocessors * 128.0 * 2 * d.clock_khz * 1e3 / 1e12;
    double got = cuda.gemm_tflops(0, 8192);
    std::printf("gemm_check: %s (sm_%d%d, %d SMs, %.0f MHz): F32 GEMM 8192^3 %.1f TFLOPS, peak %.1f: %.2fx\n", d.name, d.compute_major,
                d.compute_minor, d.multiprocessors, d.clock_khz / 1e3, got, peak, got / peak);
    return got / peak >= 0.5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_check: %s\n", e.what());
    return 1;
  }
}
