// File: kv_connector_stats.h
//
// Walking an identified kv_connector_stats payload with its connector row: every value the row
// describes comes out as one ConnectorSample (metric index, value, extra label values), in
// payload order. This is the one place that knows how a field feeds a family, shared by the
// recorder, `vmetrics decode` and the descriptor path.
//
// Tolerance (DESIGN.md §3): extra keys are ignored, a missing key is an empty list, and a value
// of the wrong type skips that field only, reported once through the context's Reporter.
//
// Thread safety: reentrant; the payload bytes must stay alive during the call.
#ifndef VMETRICS_KV_CONNECTOR_STATS_H_
#define VMETRICS_KV_CONNECTOR_STATS_H_

#include <functional>
#include <span>
#include <string_view>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {

struct ConnectorSample {
  size_t metric_index = 0;  // into row->metrics
  double value = 0;         // already multiplied by the metric's scale for observations
  // Values of row->ExtraLabelNames() (record-shaped rows), valid during the callback only.
  std::span<const std::string_view> extra_label_values;
};

using ConnectorSampleFn = std::function<void(const ConnectorSample&)>;

// ForEachConnectorSample
//
// Calls `fn` for each sample of `payload` (which must have a row and not be malformed). Returns
// the number of samples produced. Problems go to ctx.reporter with the connector name and key.
size_t ForEachConnectorSample(const ConnectorPayload& payload, const DecodeContext& ctx,
                              const ConnectorSampleFn& fn);


}  // namespace vmetrics

#endif  // VMETRICS_KV_CONNECTOR_STATS_H_
