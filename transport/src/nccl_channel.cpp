#include "cnet/transport/nccl_channel.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace cnet::transport {
namespace {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw TransportError(std::string(what) + " failed: " + cudaGetErrorString(rc));
}
void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw TransportError(std::string(what) + " failed: " + ncclGetErrorString(rc));
}

}  // namespace

struct NcclChannel::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  bool aborted = false;
};

NcclChannel::NcclChannel(Bootstrap& bootstrap, int device)
    : rank_(bootstrap.placement().rank), size_(bootstrap.placement().size), state_(std::make_unique<State>()) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  auto ids = bootstrap.allgather_values("cnet.nccl.id", std::span<const ncclUniqueId>(&id, 1));
  if (ids.at(0).size() != 1) throw TransportError("rank 0 published a damaged NCCL id");
  id = ids[0][0];
  check_cuda(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_nccl(ncclCommInitRank(&state_->comm, static_cast<int>(size_), id, static_cast<int>(rank_)), "ncclCommInitRank");
}

NcclChannel::~NcclChannel() {
  if (state_->comm) {
    if (state_->aborted) ncclCommAbort(state_->comm);
    else ncclCommDestroy(state_->comm);
  }
  if (state_->stream) cudaStreamDestroy(state_->stream);
}

void NcclChannel::group_start() { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
void NcclChannel::group_end() { check_nccl(ncclGroupEnd(), "ncclGroupEnd"); }

void NcclChannel::send(const void* buffer, std::size_t bytes, std::uint32_t peer) {
  check_nccl(ncclSend(buffer, bytes, ncclUint8, static_cast<int>(peer), state_->comm, state_->stream), "ncclSend");
}

void NcclChannel::recv(void* buffer, std::size_t bytes, std::uint32_t peer) {
  check_nccl(ncclRecv(buffer, bytes, ncclUint8, static_cast<int>(peer), state_->comm, state_->stream), "ncclRecv");
}

void NcclChannel::allreduce_sum(float* buffer, std::size_t count) {
  check_nccl(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, state_->comm, state_->stream), "ncclAllReduce");
}

void NcclChannel::synchronize(double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    cudaError_t rc = cudaStreamQuery(state_->stream);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(state_->comm, &async);
    if (async != ncclSuccess || std::chrono::steady_clock::now() > deadline) {
      state_->aborted = true;
      throw TransportError(async != ncclSuccess ? std::string("NCCL failed: ") + ncclGetErrorString(async)
                                                : "NCCL operations did not finish within " + std::to_string(timeout_s) +
                                                      " s (a peer stalled or died)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void* NcclChannel::stream() const { return state_->stream; }

}  // namespace cnet::transport
