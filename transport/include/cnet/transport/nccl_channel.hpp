#pragma once
// NcclChannel: GPU-memory data path between the ranks of a job over NCCL. Built only when CUDA and NCCL
// are found (CNET_WITH_CUDA). The NCCL unique id travels through the Bootstrap; sends and receives are
// queued on the channel's CUDA stream and grouped so pipeline neighbours progress together.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/ucx_channel.hpp"  // TransportError

namespace cnet::transport {

class NcclChannel {
 public:
  // `device`: the CUDA device of this rank (usually 0 when Slurm gives each task one GPU).
  NcclChannel(Bootstrap& bootstrap, int device);
  ~NcclChannel();
  NcclChannel(const NcclChannel&) = delete;
  NcclChannel& operator=(const NcclChannel&) = delete;

  std::uint32_t rank() const { return rank_; }
  std::uint32_t size() const { return size_; }

  // Queue operations on the stream; wrap several in group_start()/group_end() to run them together.
  void group_start();
  void group_end();
  void send(const void* device_buffer, std::size_t bytes, std::uint32_t peer);
  void recv(void* device_buffer, std::size_t bytes, std::uint32_t peer);
  void allreduce_sum(float* device_buffer, std::size_t count);
  // Waits for everything queued; a peer failure or a stall longer than timeout_s aborts the communicator
  // and throws TransportError instead of hanging.
  void synchronize(double timeout_s = 60);
  void* stream() const;  // cudaStream_t

 private:
  struct State;
  std::uint32_t rank_ = 0, size_ = 1;
  std::unique_ptr<State> state_;
};

}  // namespace cnet::transport
