#include <gtest/gtest.h>

#include "cnet/scheduling/cpu_binding.hpp"

using namespace cnet::scheduling;

TEST(CpuBinding, OnlyWithinWhatTheTaskMayUse) {
  EXPECT_EQ(bindable_cpus({0, 1, 2, 3}, {2, 3, 8}), (std::vector<unsigned>{2, 3}));
  EXPECT_TRUE(bindable_cpus({0, 1}, {4, 5}).empty());
  EXPECT_TRUE(bindable_cpus({0, 1}, {}).empty());
  EXPECT_EQ(bindable_cpus({3, 3, 1}, {1, 3}), (std::vector<unsigned>{3, 1}));
}

TEST(CpuBinding, BindingHereStaysInsideTheAffinityMask) {
  auto allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  // Wanting a CPU outside the mask as well as one inside binds to the inside one only.
  EXPECT_EQ(bind_within_allowed({allowed.front(), 4000}), "");
  EXPECT_EQ(allowed_cpus(), std::vector<unsigned>{allowed.front()});
  EXPECT_NE(bind_within_allowed({4000}).find("binding left as is"), std::string::npos);
  EXPECT_EQ(allowed_cpus(), std::vector<unsigned>{allowed.front()}) << "nothing changed";
}
