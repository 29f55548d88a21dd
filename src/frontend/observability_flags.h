// SPDX-License-Identifier: Apache-2.0
// File: observability_flags.h
//
// vLLM's ObservabilityConfig options that vmetrics takes as flags of `serve` and `replay`
// (vllm/config/observability.py): --custom-histogram-buckets and
// --show-hidden-metrics-for-version, validated as vLLM validates them, with messages naming
// the flag (docs/operator-guide.md).
#ifndef VMETRICS_FRONTEND_OBSERVABILITY_FLAGS_H_
#define VMETRICS_FRONTEND_OBSERVABILITY_FLAGS_H_

#include <optional>
#include <string>
#include <string_view>

#include "vmetrics/recorder.h"
#include "vmetrics/status.h"

namespace vmetrics::frontend {

// ParseCustomHistogramBuckets
//
// `--custom-histogram-buckets '<JSON>'`: a JSON object from bucket-family key
// (HistogramBucketFamilyKeys(), recorder.h) to a non-empty list of finite numbers > 0, strictly
// increasing; booleans are refused, as vLLM refuses them before pydantic would coerce them.
// Empty text = no overrides.
//
// Example:
//   auto b = ParseCustomHistogramBuckets(R"({"request_latency":[0.1,1,10]})");
//   // b->at(0).first == "request_latency"
Result<CustomHistogramBuckets> ParseCustomHistogramBuckets(std::string_view json);

// IsPep440Version
//
// Whether `text` parses as a version for packaging.version.parse (PEP 440, case-insensitive,
// surrounding blanks allowed):
// [v][N!]N(.N)*[{a|b|c|rc|alpha|beta|pre|preview}[N]][post][dev][+local].
bool IsPep440Version(std::string_view text);

// ShowHiddenMetrics
//
// vLLM's ObservabilityConfig.show_hidden_metrics: false without the flag; true for any value
// when the running vLLM is a development or unknown build (version._prev_minor_version_was:
// __version_tuple__ starting 0, 0); else true iff the flag equals "<major>.<minor - 1>" of the
// running version. vmetrics' running version is the one the engines report in their ready
// responses (`vllm_version`); none (replay, or engines that do not say) counts as a
// development build. `running_version` "" = none.
//
// Example:
//   ShowHiddenMetrics("0.31", "0.32.0") == true; ShowHiddenMetrics("0.30", "0.32.0") == false
bool ShowHiddenMetrics(const std::optional<std::string>& flag, std::string_view running_version);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_OBSERVABILITY_FLAGS_H_
