// File: frontend_families.h
//
// The table of every family vLLM's Python PrometheusStatLogger registers (other than the
// connector families, which come from the connector catalog): name, type, HELP, extra label
// and its values, buckets, and when it is registered. Each `vllm:` name and HELP string appears
// once, here. Table order is registration order (= render order): PrometheusStatLogger's
// (docs/design.md §2.4; docs/recording.md "Family order").
#ifndef VMETRICS_METRICS_FRONTEND_FAMILIES_H_
#define VMETRICS_METRICS_FRONTEND_FAMILIES_H_

#include <span>
#include <string_view>
#include <vector>

#include "vmetrics/connector_catalog.h"

namespace vmetrics::internal {

enum class BucketSet : uint8_t {
  kNone, kTokens125, kIterationTokens, kRequestParamsN, kTimeToFirstToken, kInterTokenLatency,
  kRequestLatency, kKvResidency
};

// Which frontend option registers the family.
enum class Gate : uint8_t { kAlways, kSpecDecode, kKvCacheMetrics };

struct FrontendFamily {
  std::string_view name;
  MetricType type;
  std::string_view help;
  // Which wire field (or frontend bookkeeping) feeds the family and how, for the metrics
  // reference (`vmetrics metrics-reference`); docs/recording.md has the full rules.
  std::string_view source;
  Gate gate = Gate::kAlways;
  BucketSet buckets = BucketSet::kNone;
  std::string_view extra_label;               // after model_name, engine; "" = none
  std::vector<std::string_view> extra_values;  // eager children, outer loop (Python order)
};

// Spec-decode counters: registered first of all (before the connector families).
std::span<const FrontendFamily> SpecDecodeFamilies();
// Everything after the connector families, in registration order (MFU counters first).
std::span<const FrontendFamily> FrontendFamilies();

// vllm:lora_requests_info: registered with LoRA enabled, after the residency histograms; its
// labels are not the common ones (no model_name, no engine), and its children appear on first
// record.
inline constexpr std::string_view kLoraRequestsInfoName = "vllm:lora_requests_info";
inline constexpr std::string_view kLoraRequestsInfoHelp = "Running stats on lora requests.";
inline constexpr std::string_view kCacheConfigInfoName = "vllm:cache_config_info";
inline constexpr std::string_view kCacheConfigInfoHelp = "Information of the LLMEngine CacheConfig";

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_FRONTEND_FAMILIES_H_
