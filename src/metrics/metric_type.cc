// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/metric_type.h"

namespace vmetrics {
namespace {

bool IsNameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

bool IsValidName(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, colon)) return false;
  }
  return true;
}

}  // namespace

const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
  }
  return "untyped";
}

bool IsValidMetricName(std::string_view name) { return IsValidName(name, /*colon=*/true); }
bool IsValidLabelName(std::string_view name) { return IsValidName(name, /*colon=*/false); }

std::string_view FamilyName(std::string_view name, MetricType type) {
  constexpr std::string_view kTotal = "_total";
  if (type == MetricType::kCounter && name.ends_with(kTotal)) {
    name.remove_suffix(kTotal.size());
  }
  return name;
}

std::vector<std::string> ExpositionNames(std::string_view name, MetricType type) {
  const std::string n(name);
  switch (type) {
    case MetricType::kCounter:
      return {n, n + "_total", n + "_created"};
    case MetricType::kHistogram:
      return {n, n + "_bucket", n + "_count", n + "_sum", n + "_created"};
    case MetricType::kSummary:
      return {n, n + "_count", n + "_sum", n + "_created"};
    case MetricType::kGauge:
      return {n};
  }
  return {n};
}

}  // namespace vmetrics
