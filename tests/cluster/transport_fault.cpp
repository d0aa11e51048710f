// transport_fault MODE: failure cases the transport must turn into clear errors, not hangs.
//   peer-dies   rank 1 kills itself in the middle of a stream of 1 MiB messages to rank 0; rank 0 must
//               report the dead peer by rank and host
//   peer-dies-mid-copy
//               rank 1 dies while rank 0 copies a 256 MiB message straight out of its memory (on one
//               node: CMA, process_vm_readv), which must be an error like any other
//   peer-dies-unmet
//               rank 1 dies with a 4 MiB send announced before rank 0 ever reached for it (its shared
//               memory is gone by then)
//   late-rank   rank 1 never reaches the fence; the others must time out naming rank 1
// Rank 0 prints "survivor: <error>" and the seconds it took, and exits 3 when it caught the failure.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/ucx_channel.hpp"

using namespace cnet::transport;

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  auto boot = PmixBootstrap::connect(std::chrono::seconds(5));
  std::uint32_t me = boot->placement().rank;
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  try {
    if (mode == "peer-dies") {
      UcxChannel ch(*boot, UcxOptions{true, std::chrono::seconds(30), {}});
      std::vector<std::byte> buf(1 << 20);
      start = std::chrono::steady_clock::now();
      for (int i = 0; i < 100000; ++i) {
        if (me == 1) {
          if (i == 20) raise(SIGKILL);
          ch.send_blocking(0, 1, buf);
        } else if (me == 0) {
          ch.recv_blocking(1, 1, buf);
        }
      }
      std::printf("rank %u: stream finished, the peer never died\n", me);
      return 0;
    }
    if (mode == "peer-dies-mid-copy" || mode == "peer-dies-unmet") {
      UcxChannel ch(*boot, UcxOptions{true, std::chrono::seconds(30), {}});
      bool mid_copy = mode == "peer-dies-mid-copy";
      // 256 MiB takes rank 0 tens of milliseconds to copy out of rank 1, which dies 20 ms in.
      std::vector<std::byte> buf(mid_copy ? 256u << 20 : 4u << 20), hello(1);
      if (mid_copy) {  // both endpoints made while both ranks live
        if (me == 0) ch.send_blocking(1, 2, hello);
        if (me == 1) ch.recv_blocking(0, 2, hello);
      }
      if (me == 1) {
        auto pending = ch.send(0, 1, buf);  // a rendezvous: the receiver fetches the data itself
        for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(mid_copy ? 20 : 300);
             std::chrono::steady_clock::now() < until;)
          ch.progress();
        raise(SIGKILL);
      }
      if (me == 0) {
        if (!mid_copy) std::this_thread::sleep_for(std::chrono::seconds(1));
        start = std::chrono::steady_clock::now();
        ch.recv_blocking(1, 1, buf);
        std::printf("rank 0: received all of a message from a rank killed while sending it\n");
      }
      return 0;
    }
    if (mode == "late-rank") {
      if (me == 1) std::this_thread::sleep_for(std::chrono::seconds(12));  // past the 5 s timeout and the probes
      start = std::chrono::steady_clock::now();
      boot->fence(false);
      std::printf("rank %u: fence passed although rank 1 was absent\n", me);
      return 0;
    }
    std::fprintf(stderr, "usage: transport_fault peer-dies|peer-dies-mid-copy|peer-dies-unmet|late-rank\n");
    return 2;
  } catch (const std::exception& e) {
    if (me == 0) std::printf("survivor: %s (after %.1f s)\n", e.what(), seconds());
    std::fflush(stdout);
    std::_Exit(3);
  }
}
