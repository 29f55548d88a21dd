// SPDX-License-Identifier: Apache-2.0
#include "buckets.h"

#include <gtest/gtest.h>

namespace vmetrics::internal {
namespace {

// Worked values of vLLM's build_1_2_5_buckets (vllm/v1/metrics/loggers.py; docs/design.md §6).
TEST(Build125Buckets, MatchesPythonWorkedValues) {
  EXPECT_EQ(Build125Buckets(1), (std::vector<double>{1}));
  EXPECT_EQ(Build125Buckets(4), (std::vector<double>{1, 2}));
  EXPECT_EQ(Build125Buckets(1024), (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}));
  EXPECT_EQ(Build125Buckets(2048).back(), 2000);
  EXPECT_EQ(Build125Buckets(8192).back(), 5000);
  EXPECT_EQ(Build125Buckets(40960).back(), 20000);
  EXPECT_EQ(Build125Buckets(131072).back(), 100000);
  EXPECT_EQ(Build125Buckets(1048576).back(), 1000000);
  EXPECT_EQ(Build125Buckets(2000000).back(), 2000000);
  EXPECT_EQ(Build125Buckets(2000000).size(), 20u);  // 1, 2, 5 for 1..1e5, then 1e6, 2e6
}

TEST(Build125Buckets, NeverAppendsTheMaximumItself) {
  // Rust's frontend appends max_model_len; Python does not.
  EXPECT_EQ(Build125Buckets(131072).back(), 100000);
}

}  // namespace
}  // namespace vmetrics::internal
