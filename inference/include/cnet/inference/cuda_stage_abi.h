/* The C interface of libcnet_cuda_stage.so, the GPU half of a pipeline stage. cnet-run loads it with
 * dlopen only when --gpu-per-stage asks for a GPU, so the tools start on nodes without CUDA or NCCL and
 * a missing runtime becomes an error message, not a failure to start. Every call returns 0 on success
 * and -1 with a message in err[len] otherwise; nothing throws across it. */
#ifndef CNET_INFERENCE_CUDA_STAGE_ABI_H
#define CNET_INFERENCE_CUDA_STAGE_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CNET_CUDA_STAGE_ABI_VERSION 3
#define CNET_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

enum cnet_cuda_layer_kind { CNET_CUDA_LINEAR, CNET_CUDA_RELU, CNET_CUDA_GELU, CNET_CUDA_SOFTMAX, CNET_CUDA_LAYERNORM, CNET_CUDA_RESIDUAL_MLP };
enum cnet_cuda_dtype { CNET_CUDA_F32, CNET_CUDA_F16, CNET_CUDA_BF16 };

/* One layer as the model file holds it. w/w2 point at the GEMM weights in weight_dtype ([out, in],
 * PyTorch's layout); the small vectors are F32. Null pointers for tensors a layer does not have. The
 * module copies everything to the GPU in stage_create; the pointers need not outlive that call. */
typedef struct cnet_cuda_layer {
  int kind, activation, weight_dtype;
  size_t in, out, hidden;
  float eps;
  const void *w, *w2;
  const float *b, *b2, *gamma, *beta;
} cnet_cuda_layer;

/* Device buffers, as planned on the host (cnet::inference::plan_gpu_stage) so the sizes checked against
 * the GPU's free memory are the ones allocated. */
typedef struct cnet_cuda_buffers {
  size_t max_rows, max_width, max_hidden, workspace_bytes;
} cnet_cuda_buffers;

typedef struct cnet_cuda_device {
  char name[256];
  char uuid[48]; /* "GPU-xxxxxxxx-..." as nvidia-smi prints it */
  size_t free_bytes, total_bytes;
  int multiprocessors, clock_khz, compute_major, compute_minor;
} cnet_cuda_device;

typedef struct cnet_cuda_stage_api {
  int abi_version;
  int (*device_count)(int* count, char* err, size_t len);
  int (*device_info)(int device, cnet_cuda_device* info, char* err, size_t len);
  /* Uploads the layers' weights once and allocates the buffers; returns the stage or null. */
  void* (*stage_create)(int device, const cnet_cuda_layer* layers, size_t count, const cnet_cuda_buffers* buffers, char* err, size_t len);
  /* Queues copy-in (or the NCCL receive), every layer and copy-out (or the NCCL send) and returns at
   * once; `in` is not read when the input arrives over NCCL. next_rows: the rows of the micro-batch
   * after this one (0: none), so that over NCCL its receive is posted while this one computes. */
  int (*stage_start)(void* stage, const float* in, size_t rows, size_t next_rows, char* err, size_t len);
  /* 1: the queued micro-batch is computed (its NCCL send may still be leaving), 0: still running,
   * -1: it failed. */
  int (*stage_poll)(void* stage, char* err, size_t len);
  /* 1: every NCCL send and receive the stage queued is done, 0: some still in flight, -1: one failed. */
  int (*stage_flush)(void* stage, char* err, size_t len);
  /* Copies the finished micro-batch (rows x last layer's out) into out; nothing when it left over NCCL. */
  int (*stage_result)(void* stage, float* out, char* err, size_t len);
  void (*stage_destroy)(void* stage);
  /* F32 GEMM n x n x n in the stage's deterministic configuration, timed on the device. */
  int (*gemm_tflops)(int device, size_t n, double* tflops, char* err, size_t len);

  /* NCCL between GPU stages, loaded by the module on first use (libnccl.so.2): where it is missing the
   * stages stay host-staged. nccl_available says why not. One communicator per linked pair of stages:
   * the sender makes the id, it reaches the receiver through the job's bootstrap, then both connect
   * (the sender as rank 0, the receiver as rank 1). */
  int (*nccl_available)(char* err, size_t len);
  int (*nccl_unique_id)(unsigned char id[CNET_NCCL_ID_BYTES], char* err, size_t len);
  void* (*nccl_connect)(int device, const unsigned char id[CNET_NCCL_ID_BYTES], int ranks, int rank, char* err, size_t len);
  void (*nccl_close)(void* comm, int abort_it); /* abort_it: a peer failed, do not wait for it */
  /* From now on the stage receives its input over recv_comm (from its rank 0) and sends its output over
   * send_comm (to its rank 1), device to device; a null communicator: through the host, as
   * stage_start/stage_result. */
  int (*stage_link)(void* stage, void* recv_comm, void* send_comm, char* err, size_t len);
} cnet_cuda_stage_api;

/* The module's one exported symbol. */
const cnet_cuda_stage_api* cnet_cuda_stage_api_v1(void);

#ifdef __cplusplus
}
#endif

#endif
