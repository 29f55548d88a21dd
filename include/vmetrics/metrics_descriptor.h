// SPDX-License-Identifier: Apache-2.0
// File: metrics_descriptor.h
//
// The `_metrics_descriptor` protocol (version 1), both ways: a descriptor that a connector
// sends inside its kv_connector_stats payload becomes a ConnectorRow (the same row type the
// built-in connectors are written in, connector_catalog.h), and any row can be written back out
// as descriptor JSON (`vmetrics describe-connectors`).
//
// The wire document (vllm/distributed/kv_transfer/kv_connector/v1/metrics_descriptor.py in
// vllm-project/vllm; docs/design.md §3.6, docs/recording.md "Descriptors"), a msgpack map:
//   {"descriptor_version": 1, "connector_id": "HiSparseConnector",
//    "metrics": [{"name": "vllm:hisparse_cache_hits", "type": "counter",
//                 "documentation": "Number of HiSparse device hot-buffer hits.",
//                 "samples_path": "cache_hits", "sample_kind": "inc_by_sum_u64"}, ...]}
// Per metric: `name`, `type` (counter | gauge | histogram), `documentation`, `buckets`
// (histograms: required), `samples_path` (dot-separated path into the payload), `sample_kind`
// (counter: inc_by_u64, inc_by_sum_u64, inc_by_f64; gauge: set_u64, set_f64; histogram:
// observe_each_f64, observe_each_u64_as_f64), `scale` (default 1.0), `const_labels` (map).
// vmetrics also reads `labelnames` (list of str; Python's MetricMetadata.labelnames): the labels
// a typed value's label-value tuples fill. It is an extension; version-1 senders omit it.
//
// Thread safety: pure functions; reentrant.
//
// Example:
//   Result<ConnectorRow> row = ParseMetricsDescriptor(payload.descriptor);
//   ASSERT_TRUE(row.ok()) << row.status().ToString();
//   EXPECT_EQ(row->metrics[0].name, "vllm:hisparse_cache_hits");
//   EXPECT_FALSE(row->builtin);
#ifndef VMETRICS_METRICS_DESCRIPTOR_H_
#define VMETRICS_METRICS_DESCRIPTOR_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "vmetrics/connector_catalog.h"
#include "vmetrics/status.h"

namespace vmetrics {

inline constexpr int64_t kDescriptorVersion = 1;

// Bounds on what one descriptor may declare; beyond them the descriptor is refused. They keep
// a hostile engine from registering unbounded families, buckets or labels.
inline constexpr size_t kMaxDescriptorMetrics = 256;
inline constexpr size_t kMaxDescriptorBuckets = 256;
inline constexpr size_t kMaxDescriptorLabels = 16;  // const_labels + labelnames, per metric
inline constexpr size_t kMaxDescriptorStringBytes = 4096;

// ParseMetricsDescriptor
//
// Reads a `_metrics_descriptor` value (the raw msgpack as it sits in the payload; `base_offset`
// is its offset in the frame, for messages) into a row: id and class_names = {connector_id},
// builtin = false, ShapeRule::kNever, children eager per engine. Normalisation, per metric:
//   - a counter's trailing `_total` is stripped from its name (Python does the same);
//   - documentation: one trailing '.' is stripped, an empty text becomes
//     "KV connector metric <name>", and then one '.' is appended. The protocol strips the
//     period because the Rust frontend's encoder appends one to every HELP; vmetrics' writer
//     appends nothing, so it puts the period back here. The HELP thus reads as the Rust
//     frontend shows it and, for every in-tree connector, as the Python frontend registers it
//     ("Number of HiSparse device hot-buffer hits.");
//   - a histogram's last bucket +Inf is dropped (prometheus_client adds +Inf itself);
//   - nil stands for an absent optional field; unknown keys are ignored.
// The returned row passes ValidateRow().
//
// Fails with InvalidArgument whose message starts with the field ("descriptor_version: expected
// 1, got 2", "metrics[1].buckets: required for histograms", "metrics[0]: metric 'vllm:x':
// sample_kind set_f64 does not fit type counter") when: the value is not a
// map; descriptor_version is missing or not 1; connector_id is missing, not a string or empty;
// metrics is missing or not a list; a metric is not a map, or misses name, type, samples_path or
// sample_kind; a field has the wrong msgpack type; type or sample_kind is unknown; the kind does
// not fit the type; a histogram has no buckets or buckets that are not strictly ascending; a
// non-histogram has buckets; scale is not finite; a label name is invalid, reserved (model_name,
// engine, le) or repeated; a name is not a valid Prometheus name or starts with `vmetrics_`
// (vmetrics' own families); samples_path reads a reserved key; or a limit above is exceeded.
// Truncated msgpack fails with Malformed. Never reads outside `raw`.
Result<ConnectorRow> ParseMetricsDescriptor(std::string_view raw, size_t base_offset = 0);

// PeekDescriptorConnectorId
//
// The `connector_id` string of a raw descriptor without validating the rest, or "" if there is
// none. Used to name a flat payload that carries a descriptor. The view points into `raw`.
std::string_view PeekDescriptorConnectorId(std::string_view raw);

// SameMetrics
//
// True if `a` and `b` declare the same metrics in the same order (every MetricDef field
// equal), leaving out the metrics a descriptor cannot say (MetricDef::descriptor_expressible:
// a built-in row's gated, eager or info metrics). Otherwise false, and `*difference` (if not null)
// says where: "metric 2 (vllm:x): documentation 'A.' vs 'B.'".
bool SameMetrics(const ConnectorRow& a, const ConnectorRow& b, std::string* difference);

// DescribeRowAsDescriptorJson
//
// The row as a version-1 descriptor document (JSON text; `indent` < 0 = one line):
//   {"descriptor_version":1,"connector_id":...,"class_names":[...],"builtin":true,
//    "children":"eager_per_engine"|"on_first_record",
//    "shape":{"rule":"has_key","key":"post_duration"}        (rows with a shape rule)
//    "record_labels":{"key":"operation","fields":[{"name":"status","default":"ok"}]}
//                                                            (record-shaped rows)
//    "metrics":[{"name","type","documentation","buckets" (histograms),"samples_path",
//                "sample_kind","scale" (if not 1),"const_labels" (if any),
//                "labelnames" (if any)}]}
// Metrics a descriptor cannot say (MetricDef::descriptor_expressible) are left out.
// `documentation` is the HELP as registered, as a Python connector sends it; `name` too, except
// that a counter registered as `x_total` is written `x_total_total` (parsing strips one).
// Feeding the document (msgpack-encoded) back to ParseMetricsDescriptor gives a row with the
// same metrics for every row that is not record-shaped and whose HELP texts end in one period.
//
// Example:
//   const ConnectorRow* h = ConnectorCatalog::BuiltIn().FindByClassName("HiSparseConnector");
//   std::string json = DescribeRowAsDescriptorJson(*h);
//   // {"descriptor_version":1,"connector_id":"HiSparseConnector",...}
std::string DescribeRowAsDescriptorJson(const ConnectorRow& row, int indent = -1);

// DescribeRowsAsDescriptorJson
//
// A JSON list of DescribeRowAsDescriptorJson documents, in the given order.
std::string DescribeRowsAsDescriptorJson(const ConnectorCatalog::RowList& rows, int indent = -1);

}  // namespace vmetrics

#endif  // VMETRICS_METRICS_DESCRIPTOR_H_
