// SPDX-License-Identifier: Apache-2.0
// File: connector_families.h
//
// ConnectorRecorder: registers the families of connector rows and records kv_connector_stats
// payloads into them, accounting every payload in
// vmetrics_kv_connector_payloads_total{connector,outcome}. Which row a payload records with,
// descriptors included, is its ConnectorResolver's decision (connector_resolver.h); a row
// adopted from a descriptor gets its families here, with one zero child per engine, like
// Python's eager children. Registration, children and recording are loops over the row;
// nothing here knows a connector by name.
//
// Label values taken from payloads (record labels, labelnames, connector class names in the
// accounting family) go through a CardinalityGuard: past the per-family limit a sample with a
// new label value is counted in vmetrics_label_values_dropped_total and dropped.
//
// Outcomes (docs/recording.md): recorded, unknown_connector (no row, no descriptor),
// malformed (not a map), invalid_descriptor (its descriptor was refused).
//
// Budget: recording W1's MultiConnector payload (NIXL, Mooncake store, Mooncake P2P) takes
// about 2.6 µs of the 5.14 µs W1 spends per message (bench/README.md: W1 decode+record 5.14 µs,
// decode alone 1.58 µs; 1.91 µs of the rest is the walk). Record resolves each payload and
// looks each child up once per field (or once per record), not once per value.
//
// Thread safety: every method may be called from any thread (one mutex serialises them); the
// registry renders concurrently (registry.h).
#ifndef VMETRICS_METRICS_CONNECTOR_FAMILIES_H_
#define VMETRICS_METRICS_CONNECTOR_FAMILIES_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cardinality_guard.h"
#include "connector_resolver.h"
#include "vmetrics/connector_identification.h"
#include "vmetrics/connector_walk.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/registry.h"

namespace vmetrics::internal {

class ConnectorRecorder {
 public:
  // Payloads are identified with a copy of `catalog` (ConnectorResolver), which
  // `_metrics_descriptor` rows are added to. `registry` must outlive the recorder. `guard`
  // bounds the children that label values from payloads can create in each family
  // (cardinality_guard.h); it is shared with the other families whose label values come from
  // outside, and must outlive the recorder.
  // `connectors` (null: nothing configured) decides which gated metrics
  // (MetricDef::registered_when) get a family; the walk decides what is fed with the
  // DecodeContext's, which must be the same. It must outlive the recorder.
  ConnectorRecorder(Registry* registry, const ConnectorCatalog& catalog, std::string model_name,
                    std::vector<std::string> engines, std::function<void(const std::string&)> log,
                    CardinalityGuard* guard, const ConnectorConfig* connectors = nullptr);

  // The rows payloads are identified with: the catalog given, plus the rows adopted since.
  const ConnectorCatalog& catalog() const { return resolver_.catalog(); }

  // Counts every payload in `payloads` (vmetrics_kv_connector_payloads, registered by the
  // declared families where it renders). Call once, before Record.
  void UseAccounting(CounterFamily payloads);
  // Registers a row's families (once per row) with eager children where the row says so; a
  // gated metric only if its gates are open for the configuration of `connector` (the class
  // name the row was configured under; the row's id when empty).
  void Register(const ConnectorRow& row, std::string_view connector = {});
  // Records one message's kv_connector_stats from engine slot `engine_slot` (index into the
  // engines given at construction).
  void Record(const KvConnectorStats& stats, size_t engine_slot, const DecodeContext& ctx);

  // Resolve
  //
  // The payloads of `stats` as Record resolves them (ConnectorResolver::Resolve): descriptors
  // are adopted now, their families registered. `vmetrics decode` shows with it what recording
  // does with each payload.
  IdentifiedPayloads Resolve(const KvConnectorStats& stats, const DecodeContext& ctx);

 private:
  struct RowState {
    std::vector<Family*> families;           // per metric index; null = gate closed
    std::vector<std::vector<Child*>> eager;  // [engine slot][metric index]; null = lazy
    // Lazily created children: key = engine slot + extra label values.
    std::unordered_map<std::string, std::vector<Child*>> lazy;
    // kSetInfo metrics: the label names their first map declared, by metric index.
    std::map<size_t, std::vector<std::string>> info_labels;
  };
  RowState& StateFor(const ConnectorRow& row, std::string_view connector);
  // One payload being recorded: what each of its samples needs.
  struct PayloadRecording {
    const ConnectorPayload& payload;
    const ConnectorRow& row;
    RowState& state;
    size_t engine_slot;
    const DecodeContext& ctx;
    uint32_t resolved_set = 0;  // the label_set whose children record_children holds
    std::vector<Child*>* record_children = nullptr;
    // record_children are those of these extra label values (a record-shaped row's), so the
    // next record with the same values (the same operation and status) takes them without a
    // look-up. Unset when they were refused.
    bool labels_resolved = false;
  };
  // Applies one sample to its child (under mu_).
  void RecordSample(PayloadRecording& rec, const ConnectorSample& s);
  // A kSetInfo sample: declares the family's label names from the first one, then sets the
  // child of the aligned values to 1 (under mu_).
  void RecordInfo(PayloadRecording& rec, const ConnectorSample& s);
  static void ReportInfoProblem(const PayloadRecording& rec, const MetricDef& m, std::string what);
  // At most this many label names from an info map (a hostile map cannot make the family's
  // label set unbounded; the values are bounded by the cardinality guard).
  static constexpr size_t kMaxInfoLabels = 32;
  void Account(std::string_view connector, const char* outcome);
  // The children for (engine slot, extra label values); an entry is null where the guard
  // refused a new child (then the result is not remembered, and is valid until the next call).
  std::vector<Child*>& LazyChildren(const ConnectorRow& row, RowState& state, size_t engine_slot,
                                    std::span<const std::string_view> extra, size_t metric_index);
  void Log(const std::string& line) const;

  Registry* registry_;
  std::string model_name_;
  std::vector<std::string> engines_;
  std::function<void(const std::string&)> log_;
  CounterFamily payloads_;
  CardinalityGuard* guard_;            // not owned
  const ConnectorConfig* connectors_;  // not owned; null = nothing configured
  std::mutex mu_;                      // guards everything below
  ConnectorResolver resolver_;
  IdentifiedPayloads resolved_;           // Record's, reused from message to message
  std::vector<Child*> refused_children_;  // LazyChildren's result when a child was refused
  LabelRefusal refused_why_ = LabelRefusal::kLimit;  // and why it was
  std::map<const ConnectorRow*, RowState> rows_;
  std::string key_buffer_;  // LazyChildren's key, reused
  // The extra label values of PayloadRecording::record_children (copies: a label read from an
  // int lives in the walk's scratch only until the next record).
  std::vector<std::string> resolved_labels_;
  // (connector, outcome) pairs, looked up without building the pair.
  struct PairLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const std::string_view a1 = a.first, b1 = b.first;
      if (a1 != b1) return a1 < b1;
      return std::string_view(a.second) < std::string_view(b.second);
    }
  };
  std::map<std::pair<std::string, std::string>, Counter*, PairLess> accounting_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CONNECTOR_FAMILIES_H_
