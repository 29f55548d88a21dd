// File: cardinality_guard.h
//
// CardinalityGuard: the per-family limit on children whose label values come from the wire
// (Mooncake store operation and status, a descriptor's labelnames, connector class names in
// vmetrics_kv_connector_payloads). An engine that sends a new label value with every message
// would otherwise grow the registry, the scrape and the memory without bound.
//
// Past the limit a new label value is not registered: the sample is counted in
// vmetrics_label_values_dropped_total{family="<family>"} and dropped, and the first drop of
// each family is logged. That accounting family is registered on the first drop, so a
// rendering without drops is unchanged. Children that exist are found as before (the limit
// costs nothing on the hot path; see Family::GetOrCreateBounded).
//
// Thread safety: every method may be called from any thread.
//
// Example:
//   CardinalityGuard guard(&registry, 2, nullptr);
//   Child* c = guard.GetOrCreate(family, values);  // or a Counter* from a CounterFamily
//   if (c == nullptr) guard.CountDropped(family);  // vmetrics_label_values_dropped_total 1
#ifndef VMETRICS_METRICS_CARDINALITY_GUARD_H_
#define VMETRICS_METRICS_CARDINALITY_GUARD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "vmetrics/registry.h"

namespace vmetrics::internal {

class CardinalityGuard {
 public:
  // `max_children` per family (0 = no limit); `log` gets the once-per-family messages
  // (nullptr = none). `registry` must outlive the guard.
  CardinalityGuard(Registry* registry, size_t max_children,
                   std::function<void(const std::string&)> log);

  // The child of `family` for `label_values`: an existing one, or a new one while the family
  // has fewer than the limit; nullptr past it (nothing is registered).
  Child* GetOrCreate(Family& family, std::span<const std::string_view> label_values);
  template <typename T>
  T* GetOrCreate(const TypedFamily<T>& family, std::span<const std::string_view> label_values) {
    return family.GetOrCreateBounded(label_values, limit());
  }

  // Counts one sample of `family` dropped because its child was refused, and logs the first
  // one of each family.
  void CountDropped(const Family& family);

  size_t max_children() const { return max_children_; }

 private:
  size_t limit() const { return max_children_ == 0 ? SIZE_MAX : max_children_; }

  Registry* registry_;
  size_t max_children_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;                                        // guards the two below
  CounterFamily dropped_family_;                         // registered on the first drop
  std::unordered_map<const Family*, Counter*> dropped_;  // family -> its dropped counter
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CARDINALITY_GUARD_H_
