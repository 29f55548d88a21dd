// SPDX-License-Identifier: Apache-2.0
// File: connector_walk.h
//
// Walking an identified kv_connector_stats payload with its connector row
// (connector_identification.h): every field the row describes comes out as one ConnectorSample
// (metric index, the field's values, extra label values), in payload order — one call per
// field, not per value, so that a recorder looks its child up once for a list of 64 transfer
// durations. This is the one place that knows how a field feeds a family, shared by the
// recorder, `vmetrics decode` and the descriptor path: a row registered from a
// `_metrics_descriptor` is walked exactly like a built-in row.
//
// Tolerance (docs/design.md §3.3): extra keys are ignored, a missing key is an empty list, and a
// value of the wrong type skips that field only, reported once through the context's Reporter.
// The reserved keys `_metrics_descriptor` and `_n_steps` are never read as data.
//
// Typed values (Offloading's `data.<name>`, any path that ends at a map whose keys are msgpack
// arrays): the keys are label-value tuples (msgspec encodes Python tuples as arrays).
//   - metric without labelnames: the empty tuple's value is read; a sole labelled entry is read
//     too, its label values dropped and reported (the Rust frontend's unwrap); with several
//     labelled entries those are reported and skipped;
//   - metric with labelnames: every entry whose tuple has one value per label name (str or int)
//     is read, the tuple giving the sample's extra label values; other entries are reported and
//     skipped.
//
// A kSetInfo metric's value is a map of label name -> value: one sample of 1 with the names in
// extra_label_names and Python's str() of the values (str, int, bool, nil, float) in
// extra_label_values; a non-string name or a value of another type skips the map (reported).
// A metric with MetricDef::fed_when or MetricDef::registered_when produces nothing while one of
// its gates is closed under the configuration of the payload's connector (ctx.connectors; its
// defaults when not configured); its payload entries are then passed over without a report, as
// for any key no metric of the row reads.
//
// Thread safety: reentrant; the payload bytes must stay alive during the call.
//
// Example:
//   std::map<std::string, double> sums;  // by family name
//   size_t n = ForEachConnectorSample(payload, row, ctx, [&](const ConnectorSample& s) {
//     for (double v : s.values) sums[row.metrics[s.metric_index].name] += v;
//   });
#ifndef VMETRICS_CONNECTOR_WALK_H_
#define VMETRICS_CONNECTOR_WALK_H_

#include <functional>
#include <span>
#include <string_view>

#include "vmetrics/connector_catalog.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {

struct ConnectorSample {
  size_t metric_index = 0;  // into row->metrics
  // The values one field gave this metric, in payload order: every element of a list field,
  // or the one value of a scalar (or 1 for a record's count). Already multiplied by the
  // metric's scale for observations. Valid during the callback only.
  std::span<const double> values;
  // Values of the labels this sample carries after model_name and engine: row->ExtraLabelNames()
  // for record-shaped rows, the metric's labelnames for labelled typed values, otherwise none
  // (const labels are the recorder's business). Valid during the callback only.
  std::span<const std::string_view> extra_label_values;
  // Nonzero: every sample of one ForEachConnectorSample call with this label_set carries the
  // same extra_label_values (the samples of one record), so a recorder may resolve the children
  // once per record. 0: no such promise.
  uint32_t label_set = 0;
  // kSetInfo samples only: the names of extra_label_values, as the payload's map has them
  // (the recorder aligns them to the names its first such map declared). Empty otherwise.
  std::span<const std::string_view> extra_label_names;
};

using ConnectorSampleFn = std::function<void(const ConnectorSample&)>;

// ForEachConnectorSample
//
// Calls `fn` for each sample of `payload` with the metrics of `row`. Returns the number of
// values produced (the sum of every sample's values.size()); 0 for a malformed payload.
// Problems go to ctx.reporter with the connector name and key.
size_t ForEachConnectorSample(const ConnectorPayload& payload, const ConnectorRow& row,
                              const DecodeContext& ctx, const ConnectorSampleFn& fn);

}  // namespace vmetrics

#endif  // VMETRICS_CONNECTOR_WALK_H_
