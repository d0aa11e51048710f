#include "stage_kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace cnet::inference::cuda {
namespace {

constexpr int kThreads = 256;  // also the fixed width of every per-row reduction tree

unsigned blocks_for(std::size_t count) {
  std::size_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 ? (b ? b : 1) : 65535);  // grid-stride loops cover the rest
}

__global__ void add_bias_kernel(float* y, const float* bias, std::size_t count, std::size_t width) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) y[i] += bias[i % width];
}

__global__ void activate_kernel(float* x, std::size_t count, bool gelu) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    float v = x[i];
    x[i] = gelu ? 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) : fmaxf(v, 0.0f);  // exact GELU, as PyTorch's default
  }
}

__global__ void add_kernel(float* a, const float* b, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) a[i] += b[i];
}

// Sum over the block in a fixed order: each thread's strided partial, then a fixed tree.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) shared[threadIdx.x] += shared[threadIdx.x + step];
    __syncthreads();
  }
  double total = shared[0];
  __syncthreads();
  return total;
}

__global__ void layernorm_kernel(const float* x, float* y, std::size_t width, const float* gamma, const float* beta, float eps) {
  __shared__ double shared[kThreads];
  const float* row = x + blockIdx.x * width;
  float* out = y + blockIdx.x * width;
  double s = 0;
  for (std::size_t i = threadIdx.x; i < width; i += kThreads) s += row[i];
  double mean = block_sum(s, shared) / static_cast<double>(width);
  double v = 0;
  for (std::size_t i = threadIdx.x; i < width; i += kThreads) v += (row[i] - mean) * (row[i] - mean);
  double var = block_sum(v, shared) / static_cast<double>(width);
  float inv = static_cast<float>(1.0 / sqrt(var + eps));
  float m = static_cast<float>(mean);
  for (std::size_t i = threadIdx.x; i < width; i += kThreads) out[i] = (row[i] - m) * inv * gamma[i] + beta[i];
}

__global__ void softmax_kernel(float* x, std::size_t width) {
  __shared__ double shared[kThreads];
  __shared__ float top_shared[kThreads];
  float* row = x + blockIdx.x * width;
  float top = -INFINITY;
  for (std::size_t i = threadIdx.x; i < width; i += kThreads) top = fmaxf(top, row[i]);
  top_shared[threadIdx.x] = top;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) top_shared[threadIdx.x] = fmaxf(top_shared[threadIdx.x], top_shared[threadIdx.x + step]);
    __syncthreads();
  }
  top = top_shared[0];
  double s = 0;
  for (std::size_t i = threadIdx.x; i < width; i += kThreads) s += (row[i] = expf(row[i] - top));
  float inv = static_cast<float>(1.0 / block_sum(s, shared));
  for (std::size_t i = threadIdx.x; i < width; i += kThreads) row[i] *= inv;
}

__global__ void to_half_kernel(const float* x, __half* y, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) y[i] = __float2half_rn(x[i]);
}

__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) y[i] = __float2bfloat16_rn(x[i]);
}

}  // namespace

void add_bias(float* y, const float* bias, std::size_t rows, std::size_t width, cudaStream_t stream) {
  add_bias_kernel<<<blocks_for(rows * width), kThreads, 0, stream>>>(y, bias, rows * width, width);
}
void activate(float* x, std::size_t count, Activation kind, cudaStream_t stream) {
  activate_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, count, kind == Activation::gelu);
}
void add_in_place(float* a, const float* b, std::size_t count, cudaStream_t stream) {
  add_kernel<<<blocks_for(count), kThreads, 0, stream>>>(a, b, count);
}
void layernorm_rows(const float* x, float* y, std::size_t rows, std::size_t width, const float* gamma, const float* beta, float eps,
                    cudaStream_t stream) {
  if (rows) layernorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, width, gamma, beta, eps);
}
void softmax_rows(float* x, std::size_t rows, std::size_t width, cudaStream_t stream) {
  if (rows) softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, width);
}
void to_16bit(const float* x, void* y, std::size_t count, bool bf16, cudaStream_t stream) {
  if (bf16) to_bf16_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, static_cast<__nv_bfloat16*>(y), count);
  else to_half_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, static_cast<__half*>(y), count);
}

}  // namespace cnet::inference::cuda
