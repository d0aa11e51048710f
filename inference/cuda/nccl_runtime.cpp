#include "nccl_runtime.hpp"

#include <dlfcn.h>

namespace cnet::inference::cuda {

const NcclRuntime* nccl_runtime(std::string& why) {
  static std::string failure;
  static const NcclRuntime* loaded = []() -> const NcclRuntime* {
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      failure = std::string("NCCL is not loadable here (") + dlerror() + ")";
      return nullptr;
    }
    static NcclRuntime r;
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn && failure.empty()) failure = std::string("libnccl.so.2 lacks ") + name + " (NCCL 2.7 or newer is needed)";
    };
    bind(r.get_unique_id, "ncclGetUniqueId");
    bind(r.comm_init_rank, "ncclCommInitRank");
    bind(r.comm_destroy, "ncclCommDestroy");
    bind(r.comm_abort, "ncclCommAbort");
    bind(r.comm_get_async_error, "ncclCommGetAsyncError");
    bind(r.send, "ncclSend");
    bind(r.recv, "ncclRecv");
    bind(r.error_string, "ncclGetErrorString");
    return failure.empty() ? &r : nullptr;
  }();
  if (!loaded) why = failure;
  return loaded;
}

}  // namespace cnet::inference::cuda
