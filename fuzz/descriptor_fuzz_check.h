// SPDX-License-Identifier: Apache-2.0
// File: descriptor_fuzz_check.h
//
// The invariants the descriptor fuzzer checks, shared by the libFuzzer entry
// (descriptor_fuzz.cc) and the corpus-replay test
// (tests/metrics/descriptor_corpus_replay_test.cc), so a crash input kept in
// fuzz/corpus/descriptor/ fails ctest without libFuzzer.
//
// Input: the raw `_metrics_descriptor` value (msgpack), as a connector sends it inside its
// kv_connector_stats payload (metrics_descriptor.h).
//
// Invariants:
//   * parsing never crashes (ASan/UBSan report anything else) and gives the same result twice;
//   * a refusal carries a message;
//   * an accepted row passes ValidateRow, stays within the kMaxDescriptor* limits, carries the
//     connector_id PeekDescriptorConnectorId reads, and is not built-in;
//   * an accepted row described back as descriptor JSON (DescribeRowAsDescriptorJson), encoded
//     as msgpack and parsed again, gives the same metrics (SameMetrics): what vmetrics
//     accepts, `vmetrics describe-connectors` writes back faithfully.
#ifndef VMETRICS_FUZZ_DESCRIPTOR_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_DESCRIPTOR_FUZZ_CHECK_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/metrics_descriptor.h"

namespace vmetrics::fuzz {

// Returns "" when every invariant holds for `raw`, else the first one broken.
inline std::string CheckDescriptorInvariants(std::string_view raw) {
  Result<ConnectorRow> first = ParseMetricsDescriptor(raw);
  Result<ConnectorRow> second = ParseMetricsDescriptor(raw);
  if (first.ok() != second.ok()) return "two parses disagree on success";
  if (!first.ok()) {
    const Status& s = first.status();
    if (s.message().empty()) return "a refusal without a message";
    if (s.ToString() != second.status().ToString()) return "two parses disagree on the error";
    return "";
  }
  const ConnectorRow& row = *first;
  if (!SameMetrics(row, *second, nullptr)) return "two parses disagree on the metrics";
  if (Status s = ValidateRow(row); !s.ok())
    return "accepted row fails ValidateRow: " + s.ToString();
  if (row.builtin) return "a descriptor row claims to be built in";
  if (row.id.empty() || row.id != PeekDescriptorConnectorId(raw)) {
    return "row id differs from the descriptor's connector_id";
  }
  // An empty metrics list is a valid descriptor (a connector with nothing to report).
  if (row.metrics.size() > kMaxDescriptorMetrics) return "more than kMaxDescriptorMetrics metrics";
  for (const MetricDef& m : row.metrics) {
    if (m.buckets.size() > kMaxDescriptorBuckets) return "too many buckets accepted";
    if (m.labelnames.size() + m.const_labels.size() > kMaxDescriptorLabels) {
      return "too many labels accepted";
    }
  }
  // Round trip through the descriptor JSON describe-connectors writes.
  std::string json;
  try {
    json = DescribeRowAsDescriptorJson(row);
  } catch (const std::exception& e) {
    return std::string("describing an accepted row throws: ") + e.what();
  }
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded()) return "the description is not JSON";
  const std::vector<uint8_t> packed = nlohmann::json::to_msgpack(doc);
  Result<ConnectorRow> again = ParseMetricsDescriptor(
      std::string_view(reinterpret_cast<const char*>(packed.data()), packed.size()));
  if (!again.ok()) return "the description does not parse back: " + again.status().ToString();
  std::string difference;
  if (!SameMetrics(row, *again, &difference)) {
    return "the description parses back to other metrics: " + difference;
  }
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_DESCRIPTOR_FUZZ_CHECK_H_
