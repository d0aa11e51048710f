#include <gtest/gtest.h>

#include "cnet/transport/link_test.hpp"

using namespace cnet::transport;

// By default every size takes about as long: large messages repeat less, never fewer than 5 times.
TEST(LinkTestOptions, LargeSizesRepeatLessByDefault) {
  LinkTestOptions o;  // up to 200, 256 MiB a size, windows of 16
  EXPECT_EQ(o.repetitions(8), 200u);
  EXPECT_EQ(o.repetitions(4 << 20), 64u);
  EXPECT_EQ(o.repetitions(64 << 20), 5u);
  EXPECT_EQ(o.bandwidth_rounds(8), 200u);
  EXPECT_EQ(o.bandwidth_rounds(4 << 20), 5u);
  o.iters = 2;  // below the floor of 5: the floor wins rather than an inverted range
  EXPECT_EQ(o.repetitions(64 << 20), 5u);
}

// A count someone asked for is what runs at every size, as ucx_perftest -n does: 400 messages of
// 4 MiB, not the 80 a 256 MiB budget allows.
TEST(LinkTestOptions, AnAskedForCountRunsAtEverySize) {
  LinkTestOptions o;
  o.iters = 400;
  o.exact_iters = true;
  EXPECT_EQ(o.repetitions(4 << 20), 400u);
  EXPECT_EQ(o.repetitions(8), 400u);
  EXPECT_EQ(o.bandwidth_rounds(4 << 20) * o.window, 400u);
  o.iters = 20;  // a window and a bit: two windows, at least the messages asked for
  EXPECT_EQ(o.bandwidth_rounds(4 << 20), 2u);
  o.iters = 1;
  EXPECT_EQ(o.repetitions(64 << 20), 1u);
  EXPECT_EQ(o.bandwidth_rounds(64 << 20), 1u);
}
