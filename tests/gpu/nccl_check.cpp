// nccl_check: NcclChannel on one GPU: a grouped send/receive to itself and an allreduce, results read
// back and checked. Needs a GPU; run by tests/gpu/run.sh on a GPU machine (CI builds it only).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cnet/transport/nccl_channel.hpp"

using namespace cnet::transport;

int main() {
  try {
    SingleProcessBootstrap boot;
    NcclChannel nccl(boot, 0);
    const std::size_t count = 16 << 20;  // 64 MiB of floats
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
    float *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, count * sizeof(float)) != cudaSuccess || cudaMalloc(&b, count * sizeof(float)) != cudaSuccess) {
      std::fprintf(stderr, "nccl_check: cudaMalloc failed\n");
      return 1;
    }
    cudaMemcpy(a, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(b, 0, count * sizeof(float));
    nccl.group_start();
    nccl.send(a, count * sizeof(float), 0);
    nccl.recv(b, count * sizeof(float), 0);
    nccl.group_end();
    nccl.allreduce_sum(b, count);
    nccl.synchronize();
    std::vector<float> back(count);
    cudaMemcpy(back.data(), b, count * sizeof(float), cudaMemcpyDeviceToHost);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += back[i] != host[i];
    std::printf("nccl_check: %zu of %zu values wrong after send/recv + allreduce on 1 rank\n", wrong, count);
    cudaFree(a);
    cudaFree(b);
    return wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nccl_check: %s\n", e.what());
    return 1;
  }
}
