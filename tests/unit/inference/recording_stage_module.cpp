// A stage module that computes nothing and records what cnet-run asks of it, behind the same C
// interface as libcnet_cuda_stage.so: the host half of the GPU path (what it hands the module, how it
// waits, what it says when the module fails or stalls) is tested here, where no GPU can run the real one.
#include <cstdio>
#include <cstring>
#include <new>

#include "cnet/inference/cuda_stage_abi.h"
#include "recording_stage_module.hpp"

namespace {

RecordingModuleState state;

int fail(const char* message, char* err, size_t len) {
  std::snprintf(err, len, "%s", message);
  return -1;
}

int device_count(int* count, char*, size_t) {
  *count = 1;
  return 0;
}

int device_info(int, cnet_cuda_device* info, char*, size_t) {
  *info = cnet_cuda_device{};
  std::snprintf(info->name, sizeof info->name, "Recording GPU");
  std::snprintf(info->uuid, sizeof info->uuid, "GPU-00000000-0000-0000-0000-000000000000");
  info->free_bytes = state.free_bytes, info->total_bytes = state.free_bytes;
  return 0;
}

struct Stage {
  size_t out_width;
};

void* stage_create(int, const cnet_cuda_layer* layers, size_t count, const cnet_cuda_buffers*, char*, size_t) {
  ++state.stages_created;
  return new (std::nothrow) Stage{count ? layers[count - 1].out : 0};
}

int stage_start(void*, const float*, size_t rows, size_t next_rows, char* err, size_t len) {
  if (state.starts < RecordingModuleState::kMaxStarts) state.started[state.starts] = {rows, next_rows};
  ++state.starts;
  state.polls_left = state.polls_per_micro_batch;
  return state.start_error[0] ? fail(state.start_error, err, len) : 0;
}

int stage_poll(void*, char* err, size_t len) {
  if (state.poll_error[0]) return fail(state.poll_error, err, len);
  if (state.stall) return 0;
  return state.polls_left-- > 0 ? 0 : 1;
}

int stage_flush(void*, char* err, size_t len) {
  ++state.flushes;
  if (state.flush_error[0]) return fail(state.flush_error, err, len);
  return state.flush_stalls ? 0 : 1;
}

int stage_result(void* handle, float* out, char*, size_t) {
  const Stage* s = static_cast<Stage*>(handle);
  const auto& last = state.started[(state.starts - 1) % RecordingModuleState::kMaxStarts];
  for (size_t i = 0; i < last.rows * s->out_width; ++i) out[i] = 1.0f;
  return 0;
}

void stage_destroy(void* handle) { delete static_cast<Stage*>(handle); }

int gemm_tflops(int, size_t, double* tflops, char*, size_t) {
  *tflops = 1.0;
  return 0;
}

int nccl_available(char*, size_t) { return 0; }
int nccl_unique_id(unsigned char id[CNET_NCCL_ID_BYTES], char*, size_t) {
  std::memset(id, 7, CNET_NCCL_ID_BYTES);
  return 0;
}
int comm_token;
void* nccl_connect(int, const unsigned char*, int, int, char*, size_t) { return &comm_token; }
void nccl_close(void*, int) {}
int stage_link(void*, void* recv_comm, void* send_comm, char*, size_t) {
  state.linked_from_prev = recv_comm != nullptr, state.linked_to_next = send_comm != nullptr;
  return 0;
}

const cnet_cuda_stage_api api = {CNET_CUDA_STAGE_ABI_VERSION, device_count, device_info, stage_create, stage_start, stage_poll,
                                 stage_flush, stage_result, stage_destroy, gemm_tflops, nccl_available, nccl_unique_id,
                                 nccl_connect, nccl_close, stage_link};

}  // namespace

extern "C" __attribute__((visibility("default"))) const cnet_cuda_stage_api* cnet_cuda_stage_api_v1(void) { return &api; }
extern "C" __attribute__((visibility("default"))) RecordingModuleState* cnet_recording_state(void) { return &state; }
