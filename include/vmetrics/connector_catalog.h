// SPDX-License-Identifier: Apache-2.0
// File: connector_catalog.h
//
// The connector catalog: one row per KV-transfer connector, describing its
// `kv_connector_stats` payload and the Prometheus families it feeds. Decoding (which row a
// payload belongs to), registration (which families exist) and recording (how each payload
// field feeds a family) are all loops over these rows, so adding a connector is adding a row.
//
// The row type is also what the `_metrics_descriptor` (version 1) that third-party connectors
// send on the wire describes (vLLM `kv_connector/v1/metrics_descriptor.py`): built-in rows and
// descriptor rows are the same data, checked by one ValidateRow(). metrics_descriptor.h turns a
// descriptor into a row and a row back into a descriptor. The protocol library only splits
// kv_connector_stats into payloads; identifying them by these rows is the metrics library's
// (connector_identification.h).
//
// Thread safety: every method may be called from any thread. A row is immutable once added
// and is never removed, so a `const ConnectorRow*` from FindByClassName() stays valid for as
// long as the catalog (or any copy of it: copies share their rows) lives. The row list is
// copy-on-write: AddRow() and AddAlias() build a new list under the mutex and publish it;
// readers take the current list under the mutex (one shared_ptr copy) and scan it unlocked.
// Decoding on one thread while a descriptor registers a row on another is therefore safe.
//
// Example:
//   const ConnectorCatalog& c = ConnectorCatalog::BuiltIn();
//   EXPECT_EQ(c.FindByClassName("NixlPullConnector")->id, "NixlConnector");
//   ConnectorCatalog mine = c;                    // shares the built-in rows
//   ASSERT_TRUE(mine.AddRow(acme_row).ok());      // BuiltIn() is not changed
#ifndef VMETRICS_CONNECTOR_CATALOG_H_
#define VMETRICS_CONNECTOR_CATALOG_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/metric_type.h"
#include "vmetrics/status.h"

namespace vmetrics {

struct ConnectorConfig;  // engine_core_outputs.h

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
  kIncByOne,             // counter += 1 per record (record-shaped payloads only; not on the wire)
  // gauge = 1 on the child whose extra labels are the entries of the map at samples_path
  // (Offloading's `info`: label name -> value). The first such map declares the label names,
  // in its order; later maps are aligned to them (a missing name gets "", another name is
  // dropped and reported). Built-in rows only: a descriptor cannot name it.
  kSetInfo,
};
const char* SampleKindName(SampleKind kind);
bool ParseSampleKind(std::string_view name, SampleKind* kind);

// A condition on the configuration of a metric's connector: kv_connector_extra_config[`key`]
// of the payload's connector (ConnectorConfig::ExtraConfigString; `default_value` when the
// connector is not configured or the key is absent) is one of `values`; or, when
// `int_at_least` is set, Python's int() of it (ConnectorConfig::ExtraConfigInt; `default_value`
// read as an integer when absent) is at least that. vLLM decides such things from the same
// configuration (e.g. Offloading's deprecated families follow the offloading spec named by
// `spec_name`, and CPUOffloadingSpec declares vllm:kv_offload_stores_skipped only when
// `store_threshold` >= 2).
struct ExtraConfigGate {
  std::string key;
  std::string default_value;
  std::vector<std::string> values;
  std::optional<int64_t> int_at_least;

  // For a gate on `values`: whether `configured` (nullopt: absent) opens it.
  bool Open(std::optional<std::string_view> configured) const {
    const std::string_view v = configured.value_or(default_value);
    for (const std::string& allowed : values) {
      if (allowed == v) return true;
    }
    return false;
  }
  // Whether the configuration of `connector` opens the gate; `config` null: nothing is
  // configured, so defaults apply. Also a value that Python's int() would refuse (vLLM then
  // fails at startup) leaves an integer gate at its default.
  bool OpenFor(const ConnectorConfig* config, std::string_view connector) const;
  bool operator==(const ExtraConfigGate&) const = default;
};

// One metric definition: a family plus the payload path that feeds it.
struct MetricDef {
  std::string name;  // family name as registered ("vllm:nixl_num_failed_transfers")
  MetricType type = MetricType::kCounter;
  std::string documentation;    // HELP, byte for byte as Python registers it
  std::vector<double> buckets;  // histograms only; ascending, finite, +Inf implied
  std::string samples_path;     // dot-separated path into the payload (or record); "" for kIncByOne
  SampleKind sample_kind = SampleKind::kIncBySumU64;
  double scale = 1.0;  // multiplier for histogram observations
  std::vector<std::pair<std::string, std::string>> const_labels;
  // Labels whose values come from the payload: a typed value at `samples_path` maps label-value
  // tuples to numbers (Offloading's `data.<name>`), and each tuple gives these labels, in order
  // (Python's MetricMetadata.labelnames). Empty: only the unlabelled entry is read. Children of
  // such a metric appear on first record. Not allowed on record-shaped rows.
  std::vector<std::string> labelnames;
  // Children (one per engine, with the const labels) at registration, even in a row whose
  // children otherwise appear on first record (Python's eager `.labels()` calls in a class
  // whose other families are lazy). Not for metrics with labelnames.
  bool eager = false;
  // Unset: always fed. Set: fed only while the gate is open (the family is registered either
  // way, as Python registers it).
  std::optional<ExtraConfigGate> fed_when;
  // Empty: always registered. Otherwise the family is registered (and fed) only when every
  // gate is open under the configuration of the connector it is registered for, as Python
  // declares some families only under some configuration (Offloading's spec-defined families:
  // OffloadPromMetrics registers `spec_cls.build_metric_definitions(extra_config)`).
  std::vector<ExtraConfigGate> registered_when;

  // Whether a `_metrics_descriptor` can say this metric (the descriptor protocol has no eager
  // override, no gates and no kSetInfo): descriptor comparisons and DescribeRowAsDescriptorJson
  // consider only these.
  bool descriptor_expressible() const {
    return !eager && !fed_when && registered_when.empty() && sample_kind != SampleKind::kSetInfo;
  }
};

// When a row's children appear. Python creates NIXL-like children for every engine at
// construction (`create_metric_per_engine`) and Mooncake-store children on first record.
enum class ChildCreation : uint8_t { kEagerPerEngine, kOnFirstRecord };

// How a payload is recognised when no connector is configured (docs/design.md §3.2,
// connector_identification.h).
enum class ShapeRule : uint8_t {
  kHasKey,            // the payload map has key `shape_key`
  kOperationRecords,  // every key is an operation and every value a list of record maps
  kTypedPayload,      // has `types` and `data` (Offloading's typed, self-describing payload)
  kNever,             // recognised only by name (configured, Multi child key, descriptor)
};

struct ConnectorRow {
  std::string id;                        // the Python class name used in labels and logs
  std::vector<std::string> class_names;  // every class name that answers to this row (incl. id)
  ShapeRule shape_rule = ShapeRule::kNever;
  std::string shape_key;  // for kHasKey
  ChildCreation children = ChildCreation::kEagerPerEngine;
  // Record-shaped payloads (Mooncake store): {<key>: [record, ...]}. The map key becomes
  // label `record_key_label`; each (field, default) of `record_label_fields` becomes a label
  // read from the record. Metric paths are then relative to the record.
  std::string record_key_label;
  std::vector<std::pair<std::string, std::string>> record_label_fields;
  std::vector<MetricDef> metrics;
  bool builtin = true;  // false: registered at run time from a `_metrics_descriptor`
  // The upstream sources the row follows (repository path and commit, or how certain the copy
  // is), for the metrics reference. Empty for descriptor rows.
  std::string upstream;

  bool record_shaped() const { return !record_key_label.empty(); }
  // Names of the extra labels this row's families carry after model_name and engine.
  std::vector<std::string> ExtraLabelNames() const;
};

// ValidateRow
//
// Checks a row the way vLLM's descriptor.rs validates a descriptor, plus what the exposition
// needs: non-empty id; per metric a valid Prometheus name, a type/kind pair that fits
// (counter: inc_*; gauge: set_*; histogram: observe_*), a non-empty samples_path whose segments
// are non-empty and that does not start at a reserved key, strictly ascending finite buckets
// for histograms and none for the others, a finite scale, valid and distinct label names
// (never model_name, engine, le, a record label, or one starting with "__"). Metrics may share
// a family name only if type, documentation, buckets and label names agree (the family is
// registered once and fed by each). Returns InvalidArgument naming the connector, metric and
// field.
Status ValidateRow(const ConnectorRow& row);

class ConnectorCatalog {
 public:
  using RowList = std::vector<std::shared_ptr<const ConnectorRow>>;

  // At most this many rows, and as many aliases, may be added at run time (descriptor rows); a
  // hostile engine cannot grow the catalog, and with it the registry, without bound.
  static constexpr size_t kMaxRuntimeRows = 64;

  // The built-in rows, in inference order (see connector_catalog.cc for the reason).
  static const ConnectorCatalog& BuiltIn();

  ConnectorCatalog();
  explicit ConnectorCatalog(std::vector<ConnectorRow> rows);
  // Copies share the (immutable) rows; rows added to a copy later are not seen by the original.
  ConnectorCatalog(const ConnectorCatalog& other);
  ConnectorCatalog& operator=(const ConnectorCatalog& other);

  // A snapshot of the rows, in catalog order (built-in rows first, then rows added at run
  // time in the order they were added).
  RowList rows() const;
  // The row answering to a Python class name (a row's class_names, or an alias), or nullptr.
  const ConnectorRow* FindByClassName(std::string_view class_name) const;
  // The rows added at run time (builtin == false), in the order added.
  RowList RuntimeRows() const;

  // AddRow
  //
  // Adds a row after ValidateRow(). Fails (InvalidArgument) if one of its class names already
  // answers to a row, if one of its families collides with a family of another row
  // (ExpositionNames overlap), or if kMaxRuntimeRows non-built-in rows exist. An empty
  // class_names becomes {id}. On failure the catalog is unchanged.
  Status AddRow(ConnectorRow row);

  // AddAlias
  //
  // Makes `class_name` answer to the row that answers to `target` (a subclass reporting under
  // its own class name with its parent's descriptor). Fails if `class_name` already answers
  // to a row, `target` to none, or kMaxRuntimeRows aliases exist.
  Status AddAlias(std::string_view class_name, std::string_view target);

 private:
  struct State {
    RowList rows;
    std::vector<std::pair<std::string, const ConnectorRow*>> aliases;
  };
  std::shared_ptr<const State> Snapshot() const;
  static const ConnectorRow* Find(const State& state, std::string_view class_name);

  mutable std::mutex mu_;
  std::shared_ptr<const State> state_;  // never null
};

// Well-known operation names of the Mooncake store (used only for shape inference; any
// operation string records once the row is known).
bool IsKnownStoreOperation(std::string_view key);

}  // namespace vmetrics

#endif  // VMETRICS_CONNECTOR_CATALOG_H_
