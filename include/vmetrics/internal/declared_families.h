// SPDX-License-Identifier: Apache-2.0
// File: declared_families.h
//
// Every family vmetrics registers other than the connector rows' (connector_catalog.cc),
// declared once, as a row of declared_families.inc: name, type, HELP, label names and the label
// values created at registration, buckets, the gate (the option that registers it), render
// group, and the text the metrics reference (`vmetrics metrics-reference`, docs/metrics.md)
// gives as its source. Each `vllm:`, `vmetrics_` and `http_` name and HELP string appears once,
// there. FamilyId and kDeclaredFamilies are both made from those rows. The recorder registers
// the rows its options open and records through handles typed by them
// (src/metrics/family_handles.h); `serve`'s own objects (engine states, HTTP families, ignored
// request fields, build info) register theirs with RegisterFamily<F>. A family is named by its
// FamilyId, so a misspelt family does not compile, and neither does an Observe on a gauge.
//
// Row order is registration order, which is render order within a render group: the rows
// marked before_connector_rows, then the families of the configured connectors (connector
// catalog order), then the other rows. vLLM's Python frontend (PrometheusStatLogger,
// vllm/v1/metrics/loggers.py at vllm-project/vllm 6adad087) registers its families in this
// order; HELP strings and buckets are its own, byte for byte.
//
// Which options open which gate is one table too, kGates, below.
//
// Adding a family: add its row to declared_families.inc where it registers; then record into
// it through its handle in recorder.cc (or register it with RegisterFamily<F> where its owner
// starts), and regenerate docs/metrics.md. docs/contributing.md walks through it.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// the metrics library's table, read by the frontend's metrics reference and registered by
// `serve`'s own objects too.
#ifndef VMETRICS_INTERNAL_DECLARED_FAMILIES_H_
#define VMETRICS_INTERNAL_DECLARED_FAMILIES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "vmetrics/metric_type.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

namespace vmetrics::internal {

// One per row of declared_families.inc, named by the row's id, in row order: made from the rows
// themselves, so an id cannot be missing, extra or out of place.
enum class FamilyId : uint8_t {
#define VMETRICS_FAMILY(row_id, ...) row_id,
#include "vmetrics/internal/declared_families.inc"
#undef VMETRICS_FAMILY
};

// Histogram bucket lists (src/metrics/buckets.h).
enum class BucketSet : uint8_t {
  kNone,
  kTokens125,  // build_1_2_5_buckets(max_model_len)
  kIterationTokens,
  kRequestParamsN,
  kTimeToFirstToken,
  kInterTokenLatency,
  kRequestLatency,
  kKvResidency,
  kRequestNumPreemptions,
  kHttpDurationHighr,  // prometheus-fastapi-instrumentator's latency_highr_buckets
  kHttpDurationLowr,   // and its latency_lowr_buckets
  kEcCpuTransferSize,  // ECCPUConnector's _TRANSFER_SIZE_BUCKETS
};

// Which option registers the family: one value per row of kGates (below), which says how.
enum class Gate : uint8_t {
  kAlways,
  kSpecDecode,
  kDiffusion,
  kKvCacheMetrics,
  kLora,
  kEngineLiveness,
  kEngineWire,
  kKvConsumer,
  kNansInLogits,
  kFirstDrop,
  kServe,
  kEcCpuConnector,
};

// Which children exist before anything is recorded.
enum class Children : uint8_t {
  // At registration: one per engine when `engine` is a label (else one), times each value of
  // `eager` (values outer, engines inner, as Python builds its {value: {engine: child}} dicts).
  kEager,
  // At registration: per engine, one per speculative position 0 .. k-1 (engines outer).
  kEagerPerPosition,
  kOnFirstRecord,
  // The label names are known only at run time (the CacheConfig keys): registered without
  // labels or children, replaced once they are known (Registry::ReplaceFamily).
  kLabelsAtRunTime,
  // Created by the object that registers the family with RegisterFamily (the Gate::kServe
  // rows: EngineStates, HttpFamilies, IgnoredFields, the build info), as it needs them.
  kByOwner,
};

// A fixed-capacity list a constant table can hold.
template <typename T, size_t N>
class ConstList {
 public:
  constexpr ConstList() = default;
  constexpr ConstList(std::initializer_list<T> items) {  // NOLINT: written as a braced list
    for (const T& item : items) items_[size_++] = item;
  }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return items_[i]; }
  constexpr const T* begin() const { return items_.data(); }
  constexpr const T* end() const { return items_.data() + size_; }

 private:
  std::array<T, N> items_{};
  size_t size_ = 0;
};

// A value of the family's last label created at registration, and what its children start at.
struct EagerValue {
  constexpr EagerValue() = default;
  constexpr EagerValue(const char* v, double start = 0) : value(v), initial(start) {}  // NOLINT
  std::string_view value;
  double initial = 0;
};

using LabelNames = ConstList<std::string_view, 4>;
using EagerValues = ConstList<EagerValue, 6>;

// The labels of a family fed per engine: `model_name` takes the served model name, `engine`
// each data-parallel rank.
inline constexpr LabelNames kPerEngine = {"model_name", "engine"};

struct FamilyDeclaration {
  FamilyId id;
  std::string_view name;  // as registered: a counter's without `_total`
  MetricType type;
  std::string_view help;  // HELP, byte for byte
  // What feeds the family (wire field or frontend bookkeeping), for the metrics reference;
  // docs/recording.md has the full rules.
  std::string_view source;
  LabelNames labels = kPerEngine;
  EagerValues eager = {};  // values of the last label, for Children::kEager
  Children children = Children::kEager;
  BucketSet buckets = BucketSet::kNone;
  Gate gate = Gate::kAlways;
  // Families render in (render group, registration) order; vmetrics' own use group 1.
  int render_group = 0;
  bool before_connector_rows = false;
  double initial = 0;  // what eager children start at (an EagerValue may say otherwise)
};

// A gate: which options open it, and how the metrics reference says so. One row per Gate, in
// its order (a static_assert below checks it). `open` says whether a StatsRecorder built with
// `options` registers the gate's rows; it is null for rows the recorder never registers, whose
// owner does (the cardinality guard, on its first drop; `serve`'s objects, when it starts).
struct GateDeclaration {
  Gate gate;
  bool (*open)(const RecorderOptions& options);
  std::string_view registered;  // docs/metrics.md's "Registered" column
};

// Whether the EC connector `options` configure opens `gate` (its row in ec_connector_rows.h
// names it). Defined in src/metrics/family_handles.cc.
bool EcConnectorOpens(const RecorderOptions& options, Gate gate);

inline constexpr GateDeclaration kGates[] = {
    {Gate::kAlways, [](const RecorderOptions&) { return true; }, "always"},
    // SpecDecodingProm: a diffusion model gets the diffusion counters, whatever the speculative
    // config says.
    {Gate::kSpecDecode,
     [](const RecorderOptions& o) { return o.num_speculative_tokens > 0 && !o.diffusion_model; },
     "`--speculative-config` with `num_speculative_tokens` > 0, without `--diffusion-model`"},
    {Gate::kDiffusion, [](const RecorderOptions& o) { return o.diffusion_model; },
     "`--diffusion-model` (instead of the spec-decode families)"},
    {Gate::kKvCacheMetrics, [](const RecorderOptions& o) { return o.kv_cache_metrics; },
     "`--kv-cache-metrics`"},
    {Gate::kLora, [](const RecorderOptions& o) { return o.max_loras > 0; },
     "`--enable-lora`, or engines that report LoRA support"},
    {Gate::kEngineLiveness, [](const RecorderOptions& o) { return o.track_engine_liveness; },
     "`vmetrics serve`"},
    {Gate::kEngineWire, [](const RecorderOptions& o) { return o.report_engine_wire; },
     "`vmetrics serve`"},
    {Gate::kKvConsumer, [](const RecorderOptions& o) { return o.connectors.is_kv_consumer(); },
     "`--kv-transfer-config` with `kv_role` `kv_consumer` or `kv_both`"},
    {Gate::kNansInLogits, [](const RecorderOptions& o) { return o.compute_nans_in_logits; },
     "environment `VLLM_COMPUTE_NANS_IN_LOGITS` set to a non-zero integer"},
    {Gate::kFirstDrop, nullptr, "the first sample dropped by the cardinality guard"},
    {Gate::kServe, nullptr, "`vmetrics serve`, when it starts"},
    // One gate per EC connector (ec_connector_rows.h names the class that opens it).
    {Gate::kEcCpuConnector,
     [](const RecorderOptions& o) { return EcConnectorOpens(o, Gate::kEcCpuConnector); },
     "`--ec-transfer-config` naming `ECCPUConnector`"},
};
inline constexpr size_t kNumGates = std::size(kGates);

constexpr const GateDeclaration& GateOf(Gate gate) { return kGates[static_cast<size_t>(gate)]; }

constexpr bool GatesFollowTheEnum() {
  for (size_t i = 0; i < kNumGates; ++i) {
    if (static_cast<size_t>(kGates[i].gate) != i) return false;
  }
  return kNumGates == static_cast<size_t>(Gate::kEcCpuConnector) + 1;
}
static_assert(GatesFollowTheEnum(), "kGates rows must follow the Gate order, one per Gate");

// The rows, in declared_families.inc's order (FamilyId's).
inline constexpr FamilyDeclaration kDeclaredFamilies[] = {
#define VMETRICS_FAMILY(row_id, ...) {.id = FamilyId::row_id, __VA_ARGS__},
#include "vmetrics/internal/declared_families.inc"
#undef VMETRICS_FAMILY
};

inline constexpr size_t kNumDeclaredFamilies = std::size(kDeclaredFamilies);

constexpr const FamilyDeclaration& Declaration(FamilyId id) {
  return kDeclaredFamilies[static_cast<size_t>(id)];
}

// The FamilyIds and the rows are in one order (both are made from declared_families.inc; this
// guards the two expansions of VMETRICS_FAMILY above).
constexpr bool RowsFollowTheIds() {
  for (size_t i = 0; i < kNumDeclaredFamilies; ++i) {
    if (static_cast<size_t>(kDeclaredFamilies[i].id) != i) return false;
  }
  return true;
}
static_assert(RowsFollowTheIds(), "kDeclaredFamilies rows must follow the FamilyId order");

// No two rows declare one name: a family is declared once (the registry would hand the second
// row the first row's family, whatever its type or labels).
constexpr bool NamesAreUnique(std::span<const FamilyDeclaration> rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = i + 1; j < rows.size(); ++j) {
      if (rows[i].name == rows[j].name) return false;
    }
  }
  return true;
}
static_assert(NamesAreUnique(kDeclaredFamilies), "a family name is declared by two rows");

// What registration relies on: a histogram has buckets and nothing else does; only gauges
// start at a value other than 0; eager values fill the last label, the only one that is not
// model_name or engine (and one exists exactly when there are eager values); the per-position
// family is labelled model_name, engine, position; a row only `serve`'s objects register
// (Gate::kServe) has its children made by them (Children::kByOwner), as nothing else would.
constexpr bool RowIsConsistent(const FamilyDeclaration& d) {
  if ((d.type == MetricType::kHistogram) != (d.buckets != BucketSet::kNone)) return false;
  bool starts_at_zero = d.initial == 0;
  for (const EagerValue& v : d.eager) starts_at_zero = starts_at_zero && v.initial == 0;
  if (!starts_at_zero && d.type != MetricType::kGauge) return false;
  if ((d.gate == Gate::kServe) != (d.children == Children::kByOwner)) return false;
  size_t others = 0;
  for (size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] == "model_name" || d.labels[i] == "engine") continue;
    const bool any_order =
        d.children == Children::kOnFirstRecord || d.children == Children::kByOwner;
    if (i + 1 != d.labels.size() && !any_order) return false;
    ++others;
  }
  switch (d.children) {
    case Children::kEager:
      return others == (d.eager.empty() ? 0u : 1u);
    case Children::kEagerPerPosition:
      return d.labels.size() == 3 && d.labels[0] == "model_name" && d.labels[1] == "engine" &&
             d.eager.empty();
    case Children::kOnFirstRecord:
    case Children::kLabelsAtRunTime:
    case Children::kByOwner:
      return d.eager.empty() && starts_at_zero;
  }
  return false;
}
constexpr bool RowsAreConsistent() {
  for (const FamilyDeclaration& d : kDeclaredFamilies) {
    if (!RowIsConsistent(d)) return false;
  }
  return true;
}
static_assert(RowsAreConsistent(), "a kDeclaredFamilies row breaks a rule of RowIsConsistent");

// The position of `value` in the family's eager values; not a constant (so a compile error
// where a constant is needed) when the family has no such value.
consteval size_t EagerIndex(FamilyId id, std::string_view value) {
  const EagerValues& values = Declaration(id).eager;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].value == value) return i;
  }
  throw "no such eager value";  // NOLINT: a consteval failure is a compile error
}

// The series type of a declared family: Counter, Gauge, Histogram or Summary.
template <FamilyId F>
using SeriesOf = std::conditional_t<
    Declaration(F).type == MetricType::kCounter, Counter,
    std::conditional_t<
        Declaration(F).type == MetricType::kGauge, Gauge,
        std::conditional_t<Declaration(F).type == MetricType::kSummary, Summary, Histogram>>>;
template <FamilyId F>
using FamilyOf = TypedFamily<SeriesOf<F>>;

// Replacement bucket lists by bucket-family key (--custom-histogram-buckets).
using BucketOverrides = std::vector<std::pair<std::string, std::vector<double>>>;

// The FamilySpec a declared family registers with (buckets for `max_model_len`, or the
// override of its bucket family). Defined in src/metrics/family_handles.cc.
FamilySpec SpecOf(const FamilyDeclaration& d, int64_t max_model_len,
                  const BucketOverrides& overrides = {});

// RegisterFamily<F>
//
// Registers row F in `registry` (at the end of the render order of its render group; the
// registered family when one of that name exists) and returns it typed; its children are the
// caller's to make. For families registered outside the recorder, by the object that owns
// them (the Gate::kServe rows; vmetrics_engine_up, which `serve` registers before any recorder).
//
// Example:
//   GaugeFamily state = RegisterFamily<FamilyId::kEngineState>(&registry);
//   state.GetOrCreate({"0", "starting"})->Set(1);
template <FamilyId F>
FamilyOf<F> RegisterFamily(Registry* registry) {
  static_assert(Declaration(F).buckets != BucketSet::kTokens125,
                "a 1-2-5 histogram needs max_model_len: register it through the recorder");
  return FamilyOf<F>(&registry->AddFamily(SpecOf(Declaration(F), 0)));
}

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_DECLARED_FAMILIES_H_
