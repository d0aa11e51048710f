// transport_fault MODE: failure cases the transport must turn into clear errors, not hangs.
//   peer-dies   rank 1 kills itself in the middle of a stream of 1 MiB messages to rank 0; rank 0 must
//               report the dead peer by rank and host
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
    if (mode == "late-rank") {
      if (me == 1) std::this_thread::sleep_for(std::chrono::seconds(12));  // past the 5 s timeout and the probes
      start = std::chrono::steady_clock::now();
      boot->fence(false);
      std::printf("rank %u: fence passed although rank 1 was absent\n", me);
      return 0;
    }
    std::fprintf(stderr, "usage: transport_fault peer-dies|late-rank\n");
    return 2;
  } catch (const std::exception& e) {
    if (me == 0) std::printf("survivor: %s (after %.1f s)\n", e.what(), seconds());
    std::fflush(stdout);
    std::_Exit(3);
  }
}
