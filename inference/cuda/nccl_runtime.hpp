#pragma once
// NCCL for the stage module, loaded with dlopen on first use: a node without libnccl still runs GPU
// stages, their activations staged through the host. Only the calls the stages make.

#include <nccl.h>

#include <string>

namespace cnet::inference::cuda {

struct NcclRuntime {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

// The loaded runtime, or null with `why` saying what is missing.
const NcclRuntime* nccl_runtime(std::string& why);

}  // namespace cnet::inference::cuda
