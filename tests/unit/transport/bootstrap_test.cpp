#include <gtest/gtest.h>

#include <cstdlib>

#include "cnet/transport/bootstrap.hpp"

using namespace cnet::transport;

namespace {
// A job whose other rank sends what the test says, to check how the typed allgathers decode it.
struct TwoRanks final : Bootstrap {
  Blob theirs;
  Placement p{0, 2, 0, 1, 0, 2, "here", "test"};
  const Placement& placement() const override { return p; }
  std::vector<Blob> allgather(std::string_view, std::span<const std::byte> mine) override { return {Blob(mine.begin(), mine.end()), theirs}; }
  [[noreturn]] void abort(int, std::string_view) override { std::abort(); }
};
}  // namespace

TEST(Bootstrap, TypedAllgathers) {
  TwoRanks job;
  std::string text = "cn2";
  job.theirs = Blob(reinterpret_cast<const std::byte*>(text.data()), reinterpret_cast<const std::byte*>(text.data()) + text.size());
  EXPECT_EQ(job.allgather_text("k", "cn1"), (std::vector<std::string>{"cn1", "cn2"}));
  std::vector<std::uint32_t> mine = {1, 2, 3}, theirs = {7};
  job.theirs.assign(reinterpret_cast<std::byte*>(theirs.data()), reinterpret_cast<std::byte*>(theirs.data() + 1));
  auto all = job.allgather_values<std::uint32_t>("k", mine);
  EXPECT_EQ(all[0], mine);
  EXPECT_EQ(all[1], theirs);
  job.theirs.resize(3);  // not a whole number of uint32s
  try {
    job.allgather_values<std::uint32_t>("cnet.run.todo", mine);
    FAIL() << "a damaged array was accepted";
  } catch (const BootstrapError& e) {
    EXPECT_STREQ(e.what(), "rank 1 sent a damaged 'cnet.run.todo' (3 bytes)");
  }
}

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
