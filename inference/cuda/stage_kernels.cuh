#pragma once
// The per-element and per-row layers of a stage on the GPU. Every reduction runs in a fixed order (one
// block per row, a fixed tree over a fixed block size, no atomics), so the same micro-batch gives the
// same bits on the same GPU model in any process.

#include <cuda_runtime.h>

#include <cstddef>

namespace cnet::inference::cuda {

enum class Activation { relu, gelu };

void add_bias(float* y, const float* bias, std::size_t rows, std::size_t width, cudaStream_t stream);
void activate(float* x, std::size_t count, Activation kind, cudaStream_t stream);
void add_in_place(float* a, const float* b, std::size_t count, cudaStream_t stream);
void layernorm_rows(const float* x, float* y, std::size_t rows, std::size_t width, const float* gamma, const float* beta, float eps,
                    cudaStream_t stream);
void softmax_rows(float* x, std::size_t rows, std::size_t width, cudaStream_t stream);
// F32 activations to the 16-bit type of the weights they are multiplied with (bf16: true for BF16).
void to_16bit(const float* x, void* y, std::size_t count, bool bf16, cudaStream_t stream);

}  // namespace cnet::inference::cuda
