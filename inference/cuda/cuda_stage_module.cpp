// libcnet_cuda_stage.so: a pipeline stage's layers on one GPU behind the C interface cnet-run dlopens
// (cuda_stage_abi.h). Weights are uploaded once, in their own dtype; GEMMs run in cuBLAS's pedantic
// (no TF32, no split-K atomics) configuration with a fixed workspace, the other layers as the kernels
// in stage_kernels.cu, all on the stage's stream. The host side hands in a micro-batch, polls (letting
// its transfers progress meanwhile) and takes the result: activations are staged through pinned memory.
// Between stages linked over NCCL, receives and sends run on streams of their own through two inboxes
// and two outboxes, as the host path's two slots do: the next micro-batch arrives and the last one
// leaves while this one computes.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cnet/inference/cuda_stage_abi.h"
#include "nccl_runtime.hpp"
#include "stage_kernels.cuh"

namespace cnet::inference::cuda {
namespace {

struct Failure {
  std::string message;
};

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Failure{std::string(what) + ": " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")"};
}
void check(cublasStatus_t rc, const char* what) {
  if (rc != CUBLAS_STATUS_SUCCESS) throw Failure{std::string(what) + ": " + cublasGetStatusName(rc) + " (" + cublasGetStatusString(rc) + ")"};
}

int report(const std::string& message, char* err, std::size_t len) {
  if (err && len) std::snprintf(err, len, "%s", message.c_str());
  return -1;
}

// Runs f, turning every failure into the interface's -1 + message.
template <class F>
int guarded(char* err, std::size_t len, F&& f) {
  try {
    f();
    return 0;
  } catch (const Failure& e) {
    return report(e.message, err, len);
  } catch (const std::exception& e) {
    return report(e.what(), err, len);
  }
}

template <class T>
T* device_alloc(std::size_t count, const char* what) {
  void* p = nullptr;
  if (count) check(cudaMalloc(&p, count * sizeof(T)), what);
  return static_cast<T*>(p);
}

std::size_t dtype_bytes(int dtype) { return dtype == CNET_CUDA_F32 ? 4 : 2; }

struct Layer {
  cnet_cuda_layer spec{};
  void *w = nullptr, *w2 = nullptr;
  float *b = nullptr, *b2 = nullptr, *gamma = nullptr, *beta = nullptr;
};

struct Comm {
  const NcclRuntime* nccl = nullptr;
  ncclComm_t comm = nullptr;
};

void check(const NcclRuntime* nccl, ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw Failure{std::string(what) + ": " + nccl->error_string(rc)};
}

struct Stage {
  int device = 0;
  Comm *recv_link = nullptr, *send_link = nullptr;  // NCCL pairs with the neighbours, when linked
  cudaStream_t stream = nullptr;                    // compute, and the host copies
  cudaStream_t recv_stream = nullptr, send_stream = nullptr;
  // inbox[k % 2] receives micro-batch k: `arrived` when it is there, `consumed` once copied out of it;
  // outbox[k % 2] sends it: `ready` once copied in, `sent` when it has left.
  float *inbox[2] = {}, *outbox[2] = {};
  cudaEvent_t arrived[2] = {}, consumed[2] = {}, ready[2] = {}, sent[2] = {}, computed = nullptr;
  std::size_t started = 0;      // micro-batches started
  std::size_t posted_rows = 0;  // rows of the receive already posted for the next one (0: none)
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  std::vector<Layer> layers;
  cnet_cuda_buffers sizes{};
  float *a = nullptr, *b = nullptr, *tmp = nullptr, *hidden = nullptr;
  void* half = nullptr;  // activations converted for 16-bit weights
  float *pinned_in = nullptr, *pinned_out = nullptr;
  std::size_t rows = 0, out_width = 0;
  bool running = false;

  bool idle() const {
    for (cudaStream_t st : {stream, recv_stream, send_stream})
      if (st && cudaStreamQuery(st) == cudaErrorNotReady) return false;
    return true;
  }

  ~Stage() {
    // A transfer still queued waits for a neighbour that failed (the job is ending over it): freeing its
    // buffers under it, or waiting for it, would be worse than leaving them to the process's exit.
    if (!idle()) return;
    for (Layer& l : layers)
      for (void* p : {l.w, l.w2, static_cast<void*>(l.b), static_cast<void*>(l.b2), static_cast<void*>(l.gamma), static_cast<void*>(l.beta)})
        if (p) cudaFree(p);
    for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(tmp), static_cast<void*>(hidden), half, workspace})
      if (p) cudaFree(p);
    for (float* p : {inbox[0], inbox[1], outbox[0], outbox[1]})
      if (p) cudaFree(p);
    if (pinned_in) cudaFreeHost(pinned_in);
    if (pinned_out) cudaFreeHost(pinned_out);
    if (blas) cublasDestroy(blas);
    for (cudaEvent_t e : {arrived[0], arrived[1], consumed[0], consumed[1], ready[0], ready[1], sent[0], sent[1], computed})
      if (e) cudaEventDestroy(e);
    for (cudaStream_t st : {stream, recv_stream, send_stream})
      if (st) cudaStreamDestroy(st);
  }
};

void* upload(const void* host, std::size_t bytes, const char* what) {
  if (!host || !bytes) return nullptr;
  void* p = device_alloc<std::byte>(bytes, what);
  check(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), what);
  return p;
}

// y[rows x out] = x[rows x in] W^T (+ bias), W stored [out x in] row-major: in cuBLAS's column-major
// terms y^T = W x^T with W read transposed.
void linear(Stage& s, const float* x, std::size_t rows, std::size_t in, const void* w, int dtype, const float* bias, std::size_t out,
            float* y) {
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(out), n = static_cast<int>(rows), k = static_cast<int>(in);
  if (dtype == CNET_CUDA_F32) {
    check(cublasGemmEx(s.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w, CUDA_R_32F, k, x, CUDA_R_32F, k, &zero, y, CUDA_R_32F, m,
                       CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx (F32)");
  } else {  // 16-bit weights stay 16-bit; the activations meet them in that type, the sums are F32
    bool bf16 = dtype == CNET_CUDA_BF16;
    cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    to_16bit(x, s.half, rows * in, bf16, s.stream);
    check(cudaGetLastError(), "converting activations to 16 bits");
    check(cublasGemmEx(s.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w, t, k, s.half, t, k, &zero, y, CUDA_R_32F, m,
                       CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
          bf16 ? "cublasGemmEx (BF16 weights)" : "cublasGemmEx (F16 weights)");
  }
  if (bias) add_bias(y, bias, rows, out, s.stream);
}

void enqueue_layers(Stage& s, std::size_t rows) {
  for (const Layer& l : s.layers) {
    const cnet_cuda_layer& p = l.spec;
    switch (p.kind) {
      case CNET_CUDA_LINEAR:
        linear(s, s.a, rows, p.in, l.w, p.weight_dtype, l.b, p.out, s.b);
        std::swap(s.a, s.b);
        break;
      case CNET_CUDA_LAYERNORM:
        layernorm_rows(s.a, s.b, rows, p.in, l.gamma, l.beta, p.eps, s.stream);
        std::swap(s.a, s.b);
        break;
      case CNET_CUDA_RELU:
      case CNET_CUDA_GELU: activate(s.a, rows * p.in, p.kind == CNET_CUDA_GELU ? Activation::gelu : Activation::relu, s.stream); break;
      case CNET_CUDA_SOFTMAX: softmax_rows(s.a, rows, p.in, s.stream); break;
      case CNET_CUDA_RESIDUAL_MLP: {
        const float* x = s.a;
        if (l.gamma) {
          layernorm_rows(s.a, s.tmp, rows, p.in, l.gamma, l.beta, p.eps, s.stream);
          x = s.tmp;
        }
        linear(s, x, rows, p.in, l.w, p.weight_dtype, l.b, p.hidden, s.hidden);
        activate(s.hidden, rows * p.hidden, p.activation == CNET_CUDA_RELU ? Activation::relu : Activation::gelu, s.stream);
        linear(s, s.hidden, rows, p.hidden, l.w2, p.weight_dtype, l.b2, p.in, s.b);
        add_in_place(s.a, s.b, rows * p.in, s.stream);
        break;
      }
      default: throw Failure{"unknown layer kind " + std::to_string(p.kind)};
    }
    check(cudaGetLastError(), "launching a layer's kernel");
  }
}

int device_count(int* count, char* err, std::size_t len) {
  return guarded(err, len, [&] { check(cudaGetDeviceCount(count), "cudaGetDeviceCount"); });
}

int device_info(int device, cnet_cuda_device* info, char* err, std::size_t len) {
  return guarded(err, len, [&] {
    *info = cnet_cuda_device{};
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    std::snprintf(info->name, sizeof info->name, "%s", prop.name);
    const unsigned char* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
    std::snprintf(info->uuid, sizeof info->uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
                  u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    info->multiprocessors = prop.multiProcessorCount;
    info->compute_major = prop.major, info->compute_minor = prop.minor;
    check(cudaDeviceGetAttribute(&info->clock_khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute(clock rate)");
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaMemGetInfo(&info->free_bytes, &info->total_bytes), "cudaMemGetInfo");
  });
}

void* stage_create(int device, const cnet_cuda_layer* layers, std::size_t count, const cnet_cuda_buffers* sizes, char* err, std::size_t len) {
  auto* s = new Stage;
  int rc = guarded(err, len, [&] {
    s->device = device;
    s->sizes = *sizes;
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&s->blas), "cublasCreate");
    check(cublasSetStream(s->blas, s->stream), "cublasSetStream");
    check(cublasSetMathMode(s->blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    check(cublasSetAtomicsMode(s->blas, CUBLAS_ATOMICS_NOT_ALLOWED), "cublasSetAtomicsMode");
    s->workspace = device_alloc<std::byte>(sizes->workspace_bytes, "allocating the cuBLAS workspace");
    check(cublasSetWorkspace(s->blas, s->workspace, sizes->workspace_bytes), "cublasSetWorkspace");
    for (std::size_t i = 0; i < count; ++i) {
      const cnet_cuda_layer& p = layers[i];
      Layer l;
      l.spec = p;
      std::size_t wb = dtype_bytes(p.weight_dtype);
      bool mlp = p.kind == CNET_CUDA_RESIDUAL_MLP;
      std::size_t out1 = mlp ? p.hidden : p.out;
      l.w = upload(p.w, out1 * p.in * wb, "uploading weights");
      l.w2 = upload(p.w2, p.in * p.hidden * wb, "uploading weights");
      l.b = static_cast<float*>(upload(p.b, out1 * 4, "uploading a bias"));
      l.b2 = static_cast<float*>(upload(p.b2, p.in * 4, "uploading a bias"));
      l.gamma = static_cast<float*>(upload(p.gamma, p.in * 4, "uploading a norm's weight"));
      l.beta = static_cast<float*>(upload(p.beta, p.in * 4, "uploading a norm's bias"));
      s->layers.push_back(l);
    }
    const std::size_t act = sizes->max_rows * sizes->max_width;
    s->a = device_alloc<float>(act, "allocating activations");
    s->b = device_alloc<float>(act, "allocating activations");
    s->tmp = device_alloc<float>(act, "allocating activations");
    s->hidden = device_alloc<float>(sizes->max_rows * sizes->max_hidden, "allocating activations");
    s->half = device_alloc<std::uint16_t>(sizes->max_rows * std::max(sizes->max_width, sizes->max_hidden), "allocating activations");
    for (int k = 0; k < 2; ++k) {
      s->inbox[k] = device_alloc<float>(act, "allocating activations");
      s->outbox[k] = device_alloc<float>(act, "allocating activations");
      for (cudaEvent_t* e : {&s->arrived[k], &s->consumed[k], &s->ready[k], &s->sent[k]})
        check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
    }
    check(cudaEventCreateWithFlags(&s->computed, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaStreamCreateWithFlags(&s->recv_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&s->send_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaMallocHost(reinterpret_cast<void**>(&s->pinned_in), act * sizeof(float)), "allocating pinned host memory");
    check(cudaMallocHost(reinterpret_cast<void**>(&s->pinned_out), act * sizeof(float)), "allocating pinned host memory");
    s->out_width = count ? layers[count - 1].out : 0;
  });
  if (rc != 0) {
    delete s;
    return nullptr;
  }
  return s;
}

// Queues micro-batch `slot`'s receive on the receive stream, once the inbox's last micro-batch has
// been copied out of it.
void post_receive(Stage& s, int slot, std::size_t rows) {
  Comm* c = s.recv_link;
  check(cudaStreamWaitEvent(s.recv_stream, s.consumed[slot], 0), "cudaStreamWaitEvent");
  check(c->nccl, c->nccl->recv(s.inbox[slot], rows * s.layers.front().spec.in, ncclFloat, 0, c->comm, s.recv_stream), "ncclRecv");
  check(cudaEventRecord(s.arrived[slot], s.recv_stream), "cudaEventRecord");
}

int stage_start(void* handle, const float* in, std::size_t rows, std::size_t next_rows, char* err, std::size_t len) {
  auto* s = static_cast<Stage*>(handle);
  return guarded(err, len, [&] {
    if (s->running) throw Failure{"a micro-batch is still running on this stage"};
    for (std::size_t r : {rows, next_rows})
      if (r > s->sizes.max_rows) throw Failure{std::to_string(r) + " rows exceed the " + std::to_string(s->sizes.max_rows) + " planned"};
    const std::size_t bytes = rows * s->layers.front().spec.in * sizeof(float);
    const int slot = static_cast<int>(s->started % 2);
    check(cudaSetDevice(s->device), "cudaSetDevice");
    if (s->recv_link) {
      if (s->posted_rows == 0) post_receive(*s, slot, rows);  // the first micro-batch
      else if (s->posted_rows != rows)
        throw Failure{"micro-batch of " + std::to_string(rows) + " rows, but " + std::to_string(s->posted_rows) + " were announced"};
      check(cudaStreamWaitEvent(s->stream, s->arrived[slot], 0), "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(s->a, s->inbox[slot], bytes, cudaMemcpyDeviceToDevice, s->stream), "copying a received micro-batch");
      check(cudaEventRecord(s->consumed[slot], s->stream), "cudaEventRecord");
      s->posted_rows = next_rows;
      if (next_rows) post_receive(*s, 1 - slot, next_rows);  // arrives while this one computes
    } else {
      std::memcpy(s->pinned_in, in, bytes);
      check(cudaMemcpyAsync(s->a, s->pinned_in, bytes, cudaMemcpyHostToDevice, s->stream), "copying a micro-batch to the GPU");
    }
    enqueue_layers(*s, rows);
    const std::size_t out_bytes = rows * s->out_width * sizeof(float);
    if (Comm* c = s->send_link) {
      check(cudaStreamWaitEvent(s->stream, s->sent[slot], 0), "cudaStreamWaitEvent");  // the outbox's last micro-batch has left
      check(cudaMemcpyAsync(s->outbox[slot], s->a, out_bytes, cudaMemcpyDeviceToDevice, s->stream), "copying a micro-batch to send");
      check(cudaEventRecord(s->ready[slot], s->stream), "cudaEventRecord");
      check(cudaStreamWaitEvent(s->send_stream, s->ready[slot], 0), "cudaStreamWaitEvent");
      check(c->nccl, c->nccl->send(s->outbox[slot], rows * s->out_width, ncclFloat, 1, c->comm, s->send_stream), "ncclSend");
      check(cudaEventRecord(s->sent[slot], s->send_stream), "cudaEventRecord");
    } else {
      check(cudaMemcpyAsync(s->pinned_out, s->a, out_bytes, cudaMemcpyDeviceToHost, s->stream), "copying a micro-batch from the GPU");
    }
    check(cudaEventRecord(s->computed, s->stream), "cudaEventRecord");
    ++s->started;
    s->rows = rows;
    s->running = true;
  });
}

// 0 while none of the stage's NCCL pairs has failed, else -1 with NCCL's reason.
int nccl_failed(Stage& s, char* err, std::size_t len) {
  for (Comm* c : {s.recv_link, s.send_link}) {
    ncclResult_t async = ncclSuccess;
    if (c && c->nccl->comm_get_async_error(c->comm, &async) == ncclSuccess && async != ncclSuccess)
      return report(std::string("NCCL failed between stages: ") + c->nccl->error_string(async), err, len);
  }
  return 0;
}

int cuda_failed(cudaError_t rc, const char* what, char* err, std::size_t len) {
  return report(std::string(what) + ": " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")", err, len);
}

int stage_poll(void* handle, char* err, std::size_t len) {
  auto* s = static_cast<Stage*>(handle);
  if (!s->running) return 1;
  cudaError_t rc = cudaEventQuery(s->computed);
  if (rc == cudaErrorNotReady) {
    if (nccl_failed(*s, err, len) == 0) return 0;
    s->running = false;
    return -1;
  }
  s->running = false;
  if (rc != cudaSuccess) return cuda_failed(rc, "computing a micro-batch", err, len);
  return 1;
}

// 1 once everything the stage sends or receives itself is done, 0 while some is in flight.
int stage_flush(void* handle, char* err, std::size_t len) {
  auto* s = static_cast<Stage*>(handle);
  for (cudaStream_t st : {s->recv_stream, s->send_stream}) {
    cudaError_t rc = cudaStreamQuery(st);
    if (rc == cudaErrorNotReady) return nccl_failed(*s, err, len);
    if (rc != cudaSuccess) return cuda_failed(rc, "a transfer between GPU stages", err, len);
  }
  return 1;
}

int stage_result(void* handle, float* out, char* err, std::size_t len) {
  auto* s = static_cast<Stage*>(handle);
  return guarded(err, len, [&] {
    if (s->running) throw Failure{"the micro-batch is still running"};
    if (!s->send_link) std::memcpy(out, s->pinned_out, s->rows * s->out_width * sizeof(float));
  });
}

void stage_destroy(void* handle) { delete static_cast<Stage*>(handle); }

int gemm_tflops(int device, std::size_t n, double* tflops, char* err, std::size_t len) {
  return guarded(err, len, [&] {
    check(cudaSetDevice(device), "cudaSetDevice");
    Stage s;  // for its handle, stream and workspace; freed at the end
    check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&s.blas), "cublasCreate");
    check(cublasSetStream(s.blas, s.stream), "cublasSetStream");
    check(cublasSetMathMode(s.blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    s.a = device_alloc<float>(n * n, "allocating a matrix");
    s.b = device_alloc<float>(n * n, "allocating a matrix");
    s.tmp = device_alloc<float>(n * n, "allocating a matrix");
    check(cudaMemsetAsync(s.a, 0, n * n * 4, s.stream), "cudaMemset");
    check(cudaMemsetAsync(s.b, 0, n * n * 4, s.stream), "cudaMemset");
    cudaEvent_t start = nullptr, stop = nullptr;
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    const int reps = 10;
    linear(s, s.a, n, n, s.b, CNET_CUDA_F32, nullptr, n, s.tmp);  // warm-up: cuBLAS picks its kernel here
    check(cudaEventRecord(start, s.stream), "cudaEventRecord");
    for (int i = 0; i < reps; ++i) linear(s, s.a, n, n, s.b, CNET_CUDA_F32, nullptr, n, s.tmp);
    check(cudaEventRecord(stop, s.stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    *tflops = 2.0 * static_cast<double>(n) * n * n * reps / (ms * 1e-3) / 1e12;
  });
}

int nccl_available(char* err, std::size_t len) {
  std::string why;
  return nccl_runtime(why) ? 0 : report(why, err, len);
}

int nccl_unique_id(unsigned char id[CNET_NCCL_ID_BYTES], char* err, std::size_t len) {
  return guarded(err, len, [&] {
    std::string why;
    const NcclRuntime* nccl = nccl_runtime(why);
    if (!nccl) throw Failure{why};
    static_assert(sizeof(ncclUniqueId) == CNET_NCCL_ID_BYTES);
    ncclUniqueId u{};
    check(nccl, nccl->get_unique_id(&u), "ncclGetUniqueId");
    std::memcpy(id, &u, sizeof u);
  });
}

void* nccl_connect(int device, const unsigned char id[CNET_NCCL_ID_BYTES], int ranks, int rank, char* err, std::size_t len) {
  auto* c = new Comm;
  int rc = guarded(err, len, [&] {
    std::string why;
    c->nccl = nccl_runtime(why);
    if (!c->nccl) throw Failure{why};
    check(cudaSetDevice(device), "cudaSetDevice");
    ncclUniqueId u{};
    std::memcpy(&u, id, sizeof u);
    check(c->nccl, c->nccl->comm_init_rank(&c->comm, ranks, u, rank), "ncclCommInitRank");
  });
  if (rc != 0) {
    delete c;
    return nullptr;
  }
  return c;
}

void nccl_close(void* handle, int abort_it) {
  auto* c = static_cast<Comm*>(handle);
  if (c && c->comm) (abort_it ? c->nccl->comm_abort : c->nccl->comm_destroy)(c->comm);
  delete c;
}

int stage_link(void* handle, void* recv_comm, void* send_comm, char* err, std::size_t len) {
  auto* s = static_cast<Stage*>(handle);
  return guarded(err, len, [&] {
    if (s->running) throw Failure{"cannot link a stage while it computes"};
    s->recv_link = static_cast<Comm*>(recv_comm);
    s->send_link = static_cast<Comm*>(send_comm);
  });
}

const cnet_cuda_stage_api kApi = {CNET_CUDA_STAGE_ABI_VERSION, device_count, device_info, stage_create, stage_start, stage_poll,
                                  stage_flush, stage_result, stage_destroy, gemm_tflops, nccl_available, nccl_unique_id,
                                  nccl_connect, nccl_close, stage_link};

}  // namespace
}  // namespace cnet::inference::cuda

extern "C" __attribute__((visibility("default"))) const cnet_cuda_stage_api* cnet_cuda_stage_api_v1(void) {
  return &cnet::inference::cuda::kApi;
}
