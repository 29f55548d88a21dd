// File: connector_catalog.h
//
// The connector catalog: one row per KV-transfer connector, describing its
// `kv_connector_stats` payload and the Prometheus families it feeds. Decoding (which row a
// payload belongs to), registration (which families exist) and recording (how each payload
// field feeds a family) are all loops over these rows, so adding a connector is adding a row.
//
// The row type is the `_metrics_descriptor` (version 1) that third-party connectors send on
// the wire (vLLM `kv_connector/v1/metrics_descriptor.py`), which is why it lives with the
// protocol: built-in rows and descriptor rows are the same data, checked by one Validate().
//
// Thread safety: a ConnectorCatalog is built before decoding starts; lookups are const and
// may run on any thread. AddRow() must not race with lookups.
//
// Example:
//   const ConnectorCatalog& c = ConnectorCatalog::BuiltIn();
//   EXPECT_EQ(c.FindByClassName("NixlPullConnector")->id, "NixlConnector");
#ifndef VMETRICS_CONNECTOR_CATALOG_H_
#define VMETRICS_CONNECTOR_CATALOG_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics {

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };
const char* MetricTypeName(MetricType type);  // "counter", "gauge", "histogram"

// How one payload value feeds a family. Names follow the descriptor protocol; the `_u64`
// kinds accept any msgpack number (Python connectors append ints or floats alike).
enum class SampleKind : uint8_t {
  kIncByU64,             // counter += scalar
  kIncBySumU64,          // counter += each element of a list (Python: inc() per element)
  kIncByF64,             // counter += scalar (float)
  kSetU64,               // gauge = scalar
  kSetF64,               // gauge = scalar (float)
  kObserveEachF64,       // histogram.observe(element * scale) for each list element
  kObserveEachU64AsF64,  // same, for integer lists
  kIncByOne,             // counter += 1 per record (record-shaped payloads only)
};
const char* SampleKindName(SampleKind kind);
bool ParseSampleKind(std::string_view name, SampleKind* kind);

// One metric definition: a family plus the payload path that feeds it.
struct MetricDef {
  std::string name;           // family name as registered ("vllm:nixl_num_failed_transfers")
  MetricType type = MetricType::kCounter;
  std::string documentation;  // HELP, byte for byte as Python registers it
  std::vector<double> buckets;  // histograms only; ascending, +Inf implied
  std::string samples_path;   // dot-separated path into the payload (or record); "" for kIncByOne
  SampleKind sample_kind = SampleKind::kIncBySumU64;
  double scale = 1.0;         // multiplier for observations
  std::vector<std::pair<std::string, std::string>> const_labels;
};

// When a row's children appear. Python creates NIXL-like children for every engine at
// construction (`create_metric_per_engine`) and Mooncake-store children on first record.
enum class ChildCreation : uint8_t { kEagerPerEngine, kOnFirstRecord };

// How a payload is recognised when no connector is configured (DESIGN.md §3).
enum class ShapeRule : uint8_t {
  kHasKey,              // the payload map has key `shape_key`
  kOperationRecords,    // every key is an operation and every value a list of record maps
  kTypedPayload,        // has `types` and `data` (Offloading's typed, self-describing payload)
  kNever,               // recognised only by name (configured, Multi child key, descriptor)
};

struct ConnectorRow {
  std::string id;                        // the Python class name used in labels and logs
  std::vector<std::string> class_names;  // every class name that answers to this row (incl. id)
  ShapeRule shape_rule = ShapeRule::kNever;
  std::string shape_key;                 // for kHasKey
  ChildCreation children = ChildCreation::kEagerPerEngine;
  // Record-shaped payloads (Mooncake store): {<key>: [record, ...]}. The map key becomes
  // label `record_key_label`; each (field, default) of `record_label_fields` becomes a label
  // read from the record. Metric paths are then relative to the record.
  std::string record_key_label;
  std::vector<std::pair<std::string, std::string>> record_label_fields;
  std::vector<MetricDef> metrics;
  bool builtin = true;

  bool record_shaped() const { return !record_key_label.empty(); }
  // Names of the extra labels this row's families carry after model_name and engine.
  std::vector<std::string> ExtraLabelNames() const;
};

// Checks a row the way vLLM's descriptor.rs validates a descriptor: non-empty id, known
// type/kind pairs (counter: inc_*; gauge: set_*; histogram: observe_*), buckets present and
// ascending for histograms, non-empty names.
Status ValidateRow(const ConnectorRow& row);

class ConnectorCatalog {
 public:
  // The built-in rows, in inference order (see connector_catalog.cc for the reason).
  static const ConnectorCatalog& BuiltIn();

  ConnectorCatalog() = default;
  explicit ConnectorCatalog(std::vector<ConnectorRow> rows);

  const std::vector<std::shared_ptr<const ConnectorRow>>& rows() const { return rows_; }
  // The row answering to a Python class name, or nullptr.
  const ConnectorRow* FindByClassName(std::string_view class_name) const;
  // Adds a validated row (descriptor path). Fails if its id or a family name collides.
  Status AddRow(ConnectorRow row);

 private:
  std::vector<std::shared_ptr<const ConnectorRow>> rows_;
};

// Well-known operation names of the Mooncake store (used only for shape inference; any
// operation string records once the row is known).
bool IsKnownStoreOperation(std::string_view key);

}  // namespace vmetrics

#endif  // VMETRICS_CONNECTOR_CATALOG_H_
