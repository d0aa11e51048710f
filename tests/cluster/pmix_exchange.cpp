// pmix_exchange: every rank publishes "<hostname>/<rank>" through PMIx, fences, and reads back every
// other rank's value. Prints one line per rank; exits 1 if any value is missing or wrong.
//   srun --mpi=pmix -N2 -n4 pmix_exchange
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cnet/transport/bootstrap.hpp"

int main() {
  using cnet::transport::PmixBootstrap;
  try {
    auto boot = PmixBootstrap::connect(std::chrono::seconds(60));
    const auto& me = boot->placement();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    boot->put("cnet.test.identity", std::string(host) + "/" + std::to_string(me.rank));
    boot->commit();
    boot->fence(true);

    std::string hosts;
    unsigned ok = 0;
    for (std::uint32_t r = 0; r < me.size; ++r) {
      std::string value = boot->get_string(r, "cnet.test.identity");
      std::string suffix = "/" + std::to_string(r);
      if (value.size() > suffix.size() && value.ends_with(suffix)) ++ok;
      else std::fprintf(stderr, "rank %u: rank %u published '%s'\n", me.rank, r, value.c_str());
      hosts += (r ? "," : "") + value.substr(0, value.find('/'));
    }
    std::printf("rank %u of %u on %s (local %u of %u, node %u of %u): %u/%u peers ok; hosts %s\n", me.rank,
                me.size, host, me.local_rank, me.local_size, me.node_id, me.num_nodes, ok, me.size,
                hosts.c_str());
    return ok == me.size ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pmix_exchange: %s\n", e.what());
    return 1;
  }
}
