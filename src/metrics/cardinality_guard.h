// SPDX-License-Identifier: Apache-2.0
// File: cardinality_guard.h
//
// CardinalityGuard: the gate every label value from the wire passes before a child is created
// for it (Mooncake store operation and status, a descriptor's labelnames, connector class names
// in vmetrics_kv_connector_payloads, LoRA adapter names). An engine that sends a new label
// value with every message would otherwise grow the registry, the scrape and the memory
// without bound, and one that sends invalid UTF-8 would make every later scrape unparsable.
//
// A new label value is refused when
//   - it is not valid UTF-8 (reason invalid_utf8),
//   - it is longer than `max_value_bytes` (label_value_too_long), or
//   - its family already has `max_children` children (label_values_limit).
// Nothing is registered for it; the caller drops the sample and calls CountDropped with the
// refusal, which counts it in vmetrics_wire_values_skipped_total{reason} and, past the
// children limit, in vmetrics_label_values_dropped_total{family="<family>"}. The first refusal
// of each (family, reason) is logged, the value escaped. Both accounting families are
// registered on their first count, so a rendering without refusals is unchanged. Children that
// exist are found as before, without checking their values again (they were checked when
// created): the checks cost nothing on the hot path.
//
// Thread safety: every method may be called from any thread.
//
// Example:
//   CardinalityGuard guard(&registry, 2, 1024, nullptr);
//   LabelRefusal why;
//   Child* c = guard.GetOrCreate(family, values, &why);
//   if (c == nullptr) guard.CountDropped(family, why);  // vmetrics_wire_values_skipped_total
#ifndef VMETRICS_METRICS_CARDINALITY_GUARD_H_
#define VMETRICS_METRICS_CARDINALITY_GUARD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vmetrics/registry.h"
#include "vmetrics/reporter.h"

namespace vmetrics::internal {

// Why GetOrCreate refused a label value set.
enum class LabelRefusal : uint8_t { kNone, kInvalidUtf8, kTooLong, kLimit };

class CardinalityGuard {
 public:
  // `max_children` per family (0 = no limit), `max_value_bytes` per label value (0 = no
  // limit); `log` gets the once-per-family messages (nullptr = none). `registry` must outlive
  // the guard.
  CardinalityGuard(Registry* registry, size_t max_children, size_t max_value_bytes,
                   std::function<void(const std::string&)> log);

  // The child of `family` for `label_values`: an existing one, or a new one if every value is
  // valid UTF-8 within the byte limit and the family has fewer than the limit; nullptr
  // otherwise (nothing is registered), with the reason in `*refusal` when given.
  Child* GetOrCreate(Family& family, std::span<const std::string_view> label_values,
                     LabelRefusal* refusal = nullptr);
  template <typename T>
  T* GetOrCreate(const TypedFamily<T>& family, std::span<const std::string_view> label_values,
                 LabelRefusal* refusal = nullptr) {
    return static_cast<T*>(GetOrCreate(family.family(), label_values, refusal));
  }

  // Counts one sample of `family` dropped because its child was refused for `why`.
  void CountDropped(const Family& family, LabelRefusal why = LabelRefusal::kLimit);

  // Counts one value skipped for `kind` in vmetrics_wire_values_skipped_total (nothing for
  // ProblemKind::kOther).
  void CountSkipped(ProblemKind kind);

  size_t max_children() const { return max_children_; }
  size_t max_value_bytes() const { return max_value_bytes_; }

 private:
  size_t limit() const { return max_children_ == 0 ? SIZE_MAX : max_children_; }
  // Logs the first refusal of `family` for `why`, quoting `value` escaped (and cut short).
  void LogRefusal(const Family& family, LabelRefusal why, std::string_view value);

  Registry* registry_;
  size_t max_children_;
  size_t max_value_bytes_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;                                            // guards the members below
  CounterFamily dropped_family_;                             // registered on the first drop
  std::unordered_map<const Family*, Counter*> dropped_;      // family -> its dropped counter
  std::vector<Counter*> skipped_;                            // by ProblemKind - 1, once registered
  std::set<std::pair<const Family*, LabelRefusal>> logged_;  // refusals already logged
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CARDINALITY_GUARD_H_
