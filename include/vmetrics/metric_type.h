// SPDX-License-Identifier: Apache-2.0
// File: metric_type.h
//
// The four Prometheus metric types vmetrics registers and the naming rules that go with them,
// as prometheus_client applies them: which names and label names are valid, the `_total` a
// counter's family name drops, and the sample names a family puts in the exposition. The
// registry, the connector catalog and the `_metrics_descriptor` parser all check names here, so
// a name the exposition cannot carry never reaches a family.
//
// Thread safety: pure functions.
//
// Example:
//   EXPECT_TRUE(IsValidMetricName("vllm:num_preemptions"));
//   EXPECT_EQ(FamilyName("vllm:prompt_tokens_total", MetricType::kCounter), "vllm:prompt_tokens");
//   EXPECT_EQ(ExpositionNames("x", MetricType::kGauge), std::vector<std::string>{"x"});
#ifndef VMETRICS_METRIC_TYPE_H_
#define VMETRICS_METRIC_TYPE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vmetrics {

// kSummary is a prometheus_client Summary without quantiles (`_count` and `_sum` only): what
// prometheus-fastapi-instrumentator's size families are. The connector catalog and the
// `_metrics_descriptor` parser take the other three only.
enum class MetricType : uint8_t { kCounter, kGauge, kHistogram, kSummary };
const char* MetricTypeName(MetricType type);  // "counter", "gauge", "histogram", "summary"

// Prometheus data model: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
// [a-zA-Z_][a-zA-Z0-9_]*. The exposition writers assume valid names (as expfmt's writers do),
// so everything that reaches a registry is checked with these first.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

// The family name prometheus_client registers for a metric named `name`: a counter drops one
// trailing `_total` (its samples add it back; "_total" itself becomes "", which is not a valid
// name), other types keep the name.
std::string_view FamilyName(std::string_view name, MetricType type);

// The sample names a family of `type` named `name` puts in the exposition, as
// prometheus_client reserves them (its `_get_names`): counter `x`, `x_total`, `x_created`;
// histogram `x`, `x_bucket`, `x_count`, `x_sum`, `x_created`; summary `x`, `x_count`, `x_sum`,
// `x_created`; gauge `x`. `name` is the family
// name (FamilyName). Two families collide when these sets overlap (prometheus_client:
// "Duplicated timeseries in CollectorRegistry").
std::vector<std::string> ExpositionNames(std::string_view name, MetricType type);

}  // namespace vmetrics

#endif  // VMETRICS_METRIC_TYPE_H_
