// SPDX-License-Identifier: Apache-2.0
// Tests of src/metrics/metric_type.cc: the Prometheus naming rules every registered name passes.
#include "vmetrics/metric_type.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vmetrics {
namespace {

TEST(MetricType, NamesAreThoseOfTheExposition) {
  EXPECT_STREQ(MetricTypeName(MetricType::kCounter), "counter");
  EXPECT_STREQ(MetricTypeName(MetricType::kGauge), "gauge");
  EXPECT_STREQ(MetricTypeName(MetricType::kHistogram), "histogram");
}

TEST(MetricType, MetricNamesMayHoldColonsLabelNamesMayNot) {
  EXPECT_TRUE(IsValidMetricName("vllm:num_preemptions"));
  EXPECT_TRUE(IsValidMetricName("_x9"));
  EXPECT_TRUE(IsValidMetricName(":x"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9x"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName("a b"));
  EXPECT_TRUE(IsValidLabelName("model_name"));
  EXPECT_TRUE(IsValidLabelName("_x9"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("9x"));
  EXPECT_FALSE(IsValidLabelName(""));
}

TEST(MetricType, ACounterDropsOneTrailingTotalAndNothingElseDoes) {
  EXPECT_EQ(FamilyName("vllm:prompt_tokens_total", MetricType::kCounter), "vllm:prompt_tokens");
  EXPECT_EQ(FamilyName("x_total_total", MetricType::kCounter), "x_total");
  EXPECT_EQ(FamilyName("_total", MetricType::kCounter), "") << "prometheus_client's rule";
  EXPECT_EQ(FamilyName("x_totals", MetricType::kCounter), "x_totals");
  EXPECT_EQ(FamilyName("vllm:iteration_tokens_total", MetricType::kHistogram),
            "vllm:iteration_tokens_total");
  EXPECT_EQ(FamilyName("g_total", MetricType::kGauge), "g_total");
}

TEST(MetricType, ExpositionNamesAreWhatPrometheusClientReserves) {
  using Names = std::vector<std::string>;
  EXPECT_EQ(ExpositionNames("x", MetricType::kCounter), (Names{"x", "x_total", "x_created"}));
  EXPECT_EQ(ExpositionNames("x", MetricType::kGauge), (Names{"x"}));
  EXPECT_EQ(ExpositionNames("x", MetricType::kHistogram),
            (Names{"x", "x_bucket", "x_count", "x_sum", "x_created"}));
  EXPECT_EQ(ExpositionNames("x", MetricType::kSummary),
            (Names{"x", "x_count", "x_sum", "x_created"}));
  EXPECT_STREQ(MetricTypeName(MetricType::kSummary), "summary");
}

}  // namespace
}  // namespace vmetrics
