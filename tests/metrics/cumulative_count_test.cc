// SPDX-License-Identifier: Apache-2.0
#include "cumulative_count.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace vmetrics::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What a kernel must give: for each bound, the values <= it, counted one comparison at a time.
std::vector<uint64_t> CountedOneByOne(const std::vector<double>& bounds,
                                      const std::vector<double>& values) {
  std::vector<uint64_t> cumulative(bounds.size(), 0);
  for (size_t k = 0; k < bounds.size(); ++k) {
    for (double v : values) cumulative[k] += v <= bounds[k];
  }
  return cumulative;
}

// Every kernel of every size, on both instruction sets the CPU has, counts what the definition
// says and adds the sum in order, bit for bit: on the bounds, beside them, at the ends of the
// double range, infinities, NaN, negative zero, and random values.
TEST(CumulativeCount, EveryKernelCountsEachBoundsValuesAtOrBelowIt) {
  std::vector<CountIsa> isas = {CountIsa::kSse2};
  if (BestCountIsa() == CountIsa::kAvx2) isas.push_back(CountIsa::kAvx2);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(-12, 12);
  for (size_t padded = kCumulativeBoundsMultiple; padded <= kMaxCumulativeBounds;
       padded += kCumulativeBoundsMultiple) {
    // Finite ascending bounds, then +Inf to the padded size (as Family lays them out).
    const size_t finite = padded - 1 - (padded / 3) % kCumulativeBoundsMultiple;
    std::vector<double> bounds;
    for (size_t k = 0; k < finite; ++k) {
      bounds.push_back(std::ldexp(1.0, static_cast<int>(k)) * 1e-3);
    }
    bounds.resize(padded, kInf);
    std::vector<double> values = {0.0,
                                  -0.0,
                                  -1.0,
                                  kInf,
                                  -kInf,
                                  std::nan(""),
                                  std::numeric_limits<double>::max(),
                                  std::numeric_limits<double>::denorm_min()};
    for (size_t k = 0; k < finite; ++k) {
      values.insert(values.end(),
                    {bounds[k], std::nextafter(bounds[k], -kInf), std::nextafter(bounds[k], kInf)});
    }
    for (int i = 0; i < 500; ++i) values.push_back(std::pow(10.0, exponent(random)) * 1e-3);
    const std::vector<uint64_t> expected = CountedOneByOne(bounds, values);
    // Values whose sum stays finite, for a bit-for-bit comparison of the sum.
    std::vector<double> summable;
    for (double v : values) {
      if (std::isfinite(v) && v != std::numeric_limits<double>::max()) summable.push_back(v);
    }
    double expected_sum = 0.25;
    for (double v : summable) expected_sum += v;
    for (CountIsa isa : isas) {
      const std::string where =
          "padded " + std::to_string(padded) + " isa " + std::to_string(static_cast<int>(isa));
      const CumulativeCounter count = CumulativeCounterFor(padded, isa);
      ASSERT_NE(count, nullptr) << where;
      std::vector<uint64_t> cumulative(padded, 12345);
      (void)count(bounds.data(), values, 0.0, cumulative.data());
      EXPECT_EQ(cumulative, expected) << where;
      EXPECT_EQ(cumulative.back(), values.size() - 1) << where << ": every value but NaN";
      // The sum, over values whose sum is finite: the same adds in the same order.
      std::vector<uint64_t> unused(padded);
      const double sum = count(bounds.data(), summable, 0.25, unused.data());
      EXPECT_EQ(std::bit_cast<uint64_t>(sum), std::bit_cast<uint64_t>(expected_sum)) << where;
      // No values: zero counts, the sum unchanged.
      std::fill(cumulative.begin(), cumulative.end(), 99);
      EXPECT_EQ(count(bounds.data(), {}, 0.5, cumulative.data()), 0.5) << where;
      EXPECT_EQ(cumulative, std::vector<uint64_t>(padded, 0)) << where;
    }
  }
}

TEST(CumulativeCount, NoKernelForSizesItDoesNotHandle) {
  for (CountIsa isa : {CountIsa::kSse2, CountIsa::kAvx2}) {
    EXPECT_EQ(CumulativeCounterFor(0, isa), nullptr);
    EXPECT_EQ(CumulativeCounterFor(kCumulativeBoundsMultiple + 1, isa), nullptr);
    EXPECT_EQ(CumulativeCounterFor(kMaxCumulativeBounds + kCumulativeBoundsMultiple, isa), nullptr);
  }
}

}  // namespace
}  // namespace vmetrics::internal
