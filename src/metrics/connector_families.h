// File: connector_families.h
//
// ConnectorRecorder: registers the families of connector rows and records identified
// kv_connector_stats payloads into them, accounting every payload in
// vmetrics_kv_connector_payloads_total{connector,outcome}. Registration, children and
// recording are loops over the row; nothing here knows a connector by name.
//
// Third-party connectors (`_metrics_descriptor`, metrics_descriptor.h): a payload whose class
// name has no row but that carries a descriptor gets a row here, at run time, in the catalog
// the decoder reads (so the connector's later payloads are identified while decoding), and its
// families are registered with one zero child per engine, like Python's eager children. The
// row is bound to the payload's class name: a MultiConnector child key, the configured
// connector, or (a bare payload, nothing configured) the descriptor's connector_id. A
// descriptor whose connector_id differs from that key is re-bound to the key, or, when its
// connector_id names a row with exactly these metrics (a subclass sending its parent's
// descriptor), the key becomes an alias of that row. A descriptor for a class that already has
// a row is checked against the row and any difference reported; the row is kept.
//
// Label values taken from payloads (record labels, labelnames, connector class names in the
// accounting family) go through a CardinalityGuard: past the per-family limit a sample with a
// new label value is counted in vmetrics_label_values_dropped_total and dropped.
//
// Outcomes (docs/recording.md): recorded, unknown_connector (no row, no descriptor),
// malformed (not a map), invalid_descriptor (its descriptor was refused: invalid, or its
// families collide with registered ones; every later payload of that class counts here too
// until a valid descriptor arrives). Each refusal is reported once with its reason.
//
// Thread safety: Record and Register may be called from any thread (one mutex serialises
// them); the catalog is shared with decoding threads (connector_catalog.h), and the registry
// renders concurrently (registry.h).
#ifndef VMETRICS_METRICS_CONNECTOR_FAMILIES_H_
#define VMETRICS_METRICS_CONNECTOR_FAMILIES_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "metrics/cardinality_guard.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/kv_connector_stats.h"
#include "vmetrics/registry.h"

namespace vmetrics::internal {

// Values of the `outcome` label of vmetrics_kv_connector_payloads_total.
inline constexpr const char* kOutcomeRecorded = "recorded";
inline constexpr const char* kOutcomeUnknownConnector = "unknown_connector";
inline constexpr const char* kOutcomeMalformed = "malformed";
inline constexpr const char* kOutcomeInvalidDescriptor = "invalid_descriptor";

class ConnectorRecorder {
 public:
  // `catalog` is the one the payloads are decoded with; descriptor rows are added to it. It
  // and `registry` must outlive the recorder.
  // `guard` bounds the children that label values from payloads can create in each family
  // (cardinality_guard.h); it is shared with the other families whose label values come from
  // outside, and must outlive the recorder.
  ConnectorRecorder(Registry* registry, ConnectorCatalog* catalog, std::string model_name,
                    std::vector<std::string> engines, std::function<void(const std::string&)> log,
                    CardinalityGuard* guard);

  // Registers vmetrics_kv_connector_payloads (call once, where it belongs in render order).
  void RegisterAccounting();
  // Registers a row's families (once per row) with eager children where the row says so.
  void Register(const ConnectorRow& row);
  // Records one message's kv_connector_stats from engine slot `engine_slot` (index into the
  // engines given at construction).
  void Record(const KvConnectorStats& stats, size_t engine_slot, const DecodeContext& ctx);

  // Resolve
  //
  // The row that recording uses for payload `p` (not malformed): its decoded row, a row added
  // since, or the row its `_metrics_descriptor` describes, adopted into the catalog now (its
  // families registered). nullptr, with `*outcome` set to kOutcomeUnknownConnector or
  // kOutcomeInvalidDescriptor, when there is none. `vmetrics decode` shows with it what
  // recording would do.
  const ConnectorRow* Resolve(const ConnectorPayload& p, const DecodeContext& ctx,
                              const char** outcome);

 private:
  struct RowState {
    std::vector<Family*> families;           // per metric index
    std::vector<std::vector<Child*>> eager;  // [engine slot][metric index]; null = lazy
    // Lazily created children: key = engine slot + extra label values.
    std::unordered_map<std::string, std::vector<Child*>> lazy;
  };
  RowState& StateFor(const ConnectorRow& row);
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
  void Account(const std::string& connector, const char* outcome);
  // The children for (engine slot, extra label values); an entry is null where the guard
  // refused a new child (then the result is not remembered, and is valid until the next call).
  std::vector<Child*>& LazyChildren(const ConnectorRow& row, RowState& state, size_t engine_slot,
                                    std::span<const std::string_view> extra, size_t metric_index);
  // Resolve, under mu_.
  const ConnectorRow* ResolveLocked(const ConnectorPayload& p, const DecodeContext& ctx,
                                    const char** outcome);
  Status AdoptDescriptor(const ConnectorPayload& p, const DecodeContext& ctx,
                         const ConnectorRow** row);
  void CheckDescriptor(const ConnectorPayload& p, const ConnectorRow& row,
                       const DecodeContext& ctx);
  Status CheckRegistryConflicts(const ConnectorRow& row) const;
  void Log(const std::string& line) const;

  // Bounds the memory a stream of distinct class names with bad descriptors can take.
  static constexpr size_t kMaxRemembered = 256;

  Registry* registry_;
  ConnectorCatalog* catalog_;
  std::string model_name_;
  std::vector<std::string> engines_;
  std::function<void(const std::string&)> log_;
  Family* payloads_family_ = nullptr;
  CardinalityGuard* guard_;               // not owned
  std::mutex mu_;                         // guards everything below
  std::vector<Child*> refused_children_;  // LazyChildren's result when a child was refused
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
  std::map<std::pair<std::string, std::string>, Child*, PairLess> accounting_;
  // Class name -> the raw descriptor last checked or adopted for it (skips re-parsing the
  // descriptor every data-parallel engine sends once).
  std::map<std::string, std::string, std::less<>> descriptors_seen_;
  // Class name -> (raw descriptor, why it was refused).
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> refused_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CONNECTOR_FAMILIES_H_
