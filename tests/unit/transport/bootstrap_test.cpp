#include <gtest/gtest.h>

#include <cstdlib>

#include "cnet/transport/bootstrap.hpp"

using cnet::transport::PmixBootstrap;
using cnet::transport::BootstrapError;

// Without a PMIx server every task would silently be "rank 0 of 1"; the bootstrap must refuse instead
// and tell the user how to launch.
TEST(Bootstrap, RefusesToGuessWithoutPmixServer) {
  unsetenv("PMIX_NAMESPACE");
  try {
    PmixBootstrap::connect();
    FAIL() << "connect() succeeded without a PMIx server";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find("--mpi=pmix"), std::string::npos) << e.what();
  }
}
