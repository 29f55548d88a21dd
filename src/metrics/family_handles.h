// SPDX-License-Identifier: Apache-2.0
// File: family_handles.h
//
// Typed handles to the declared families (include/vmetrics/internal/declared_families.h).
// DeclaredFamilies registers the rows whose option is on and resolves every child that exists
// from the start, once, like vLLM's resolve_scheduler_stats_handles; the recorder then records
// through EngineHandles, whose accessors take the FamilyId (and the eager label value) as
// template arguments: a family that is not declared, a value it does not create, or a method
// its type does not have (Observe on a gauge) is a compile error, and an access costs what a
// struct member does.
//
// Example:
//   const EngineHandles& h = declared.engine(slot);
//   h.Get<FamilyId::kNumRequestsRunning>()->Set(3);
//   h.Get<FamilyId::kPromptTokensBySource, "local_cache_hit">()->Add(16);
//
// Thread safety: registration happens once, in the recorder's constructor; the handles are
// read-only afterwards, and recording through them is lock-free (registry.h).
#ifndef VMETRICS_METRICS_FAMILY_HANDLES_H_
#define VMETRICS_METRICS_FAMILY_HANDLES_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "vmetrics/internal/declared_families.h"
#include "vmetrics/registry.h"

namespace vmetrics::internal {

// A string literal as a template argument: Get<F, "capacity">().
template <size_t N>
struct Literal {
  constexpr Literal(const char (&text)[N]) { std::copy_n(text, N, chars); }  // NOLINT
  constexpr std::string_view view() const { return {chars, N - 1}; }
  char chars[N];
};

// How many children of family `d` each engine has from the start, at fixed places: the eager
// children of a family labelled model_name, engine (one per eager value, or one). Positions
// (Children::kEagerPerPosition) are counted at run time instead.
constexpr size_t EngineSlotsOf(const FamilyDeclaration& d) {
  const bool per_engine =
      d.labels.size() >= 2 && d.labels[0] == "model_name" && d.labels[1] == "engine";
  if (!per_engine || d.children != Children::kEager) return 0;
  return d.eager.empty() ? 1 : d.eager.size();
}
constexpr size_t EngineSlotOffset(FamilyId id) {
  size_t offset = 0;
  for (size_t i = 0; i < static_cast<size_t>(id); ++i)
    offset += EngineSlotsOf(kDeclaredFamilies[i]);
  return offset;
}
inline constexpr size_t kEngineSlots =
    EngineSlotOffset(kDeclaredFamilies[kNumDeclaredFamilies - 1].id) +
    EngineSlotsOf(kDeclaredFamilies[kNumDeclaredFamilies - 1]);

// One engine's children of the declared families. A family whose option is off has none: its
// handles are null (the recorder checks the option, or the handle, before recording).
class EngineHandles {
 public:
  // The engine's child of F for its `value`-th eager value (0 without eager values).
  template <FamilyId F>
  SeriesOf<F>* Get(size_t value = 0) const {
    static_assert(EngineSlotsOf(Declaration(F)) > 0, "F has no eager per-engine children");
    // A constant: the offset is worked out by the compiler, not by a loop over the table.
    constexpr size_t kOffset = EngineSlotOffset(F);
    return static_cast<SeriesOf<F>*>(slots_[kOffset + value]);
  }
  // The engine's child of F for the eager value V.
  template <FamilyId F, Literal V>
  SeriesOf<F>* Get() const {
    constexpr size_t kIndex = EagerIndex(F, V.view());
    return Get<F>(kIndex);
  }
  // The engine's child of F (Children::kEagerPerPosition) for speculative position `pos`.
  template <FamilyId F>
  SeriesOf<F>* Position(size_t pos) const {
    static_assert(Declaration(F).children == Children::kEagerPerPosition);
    return static_cast<SeriesOf<F>*>(positions_[pos]);
  }
  size_t positions() const { return positions_.size(); }

 private:
  friend class DeclaredFamilies;
  std::array<Child*, kEngineSlots> slots_{};
  std::vector<Child*> positions_;  // the one Children::kEagerPerPosition family's
};

// Which gates are open (declared_families.h, kGates).
class OpenGates {
 public:
  // The gates a StatsRecorder built with `options` opens: each kGates row's `open`.
  static OpenGates For(const RecorderOptions& options);
  // Gate::kAlways is open in every OpenGates, a default-constructed one included.
  bool Open(Gate gate) const { return gate == Gate::kAlways || open_[static_cast<size_t>(gate)]; }
  void Set(Gate gate, bool open) { open_[static_cast<size_t>(gate)] = open; }

 private:
  std::array<bool, kNumGates> open_{};
};

class DeclaredFamilies {
 public:
  // Children are created for `model_name` and each of `engines` (their indexes as text), with
  // one child per position 0 .. num_speculative_tokens - 1 for the per-position family.
  DeclaredFamilies(Registry* registry, std::string model_name, std::vector<std::string> engines,
                   int64_t max_model_len, int64_t num_speculative_tokens, OpenGates gates,
                   BucketOverrides bucket_overrides = {});

  // Registers, in table order, the rows whose gate is open and whose before_connector_rows is
  // `before_connector_rows`, with their eager children. Call with true, register the connector
  // families, then call with false.
  void Register(bool before_connector_rows);

  // F's family, or an empty one when its gate is closed.
  template <FamilyId F>
  FamilyOf<F> family() const {
    return FamilyOf<F>(families_[static_cast<size_t>(F)]);
  }
  // The family of row `id`, or null when its gate is closed; for code that picks rows at run
  // time (the configured EC connector's).
  Family* FamilyOrNull(FamilyId id) const { return families_[static_cast<size_t>(id)]; }
  // The one child of an unlabelled family F.
  template <FamilyId F>
  SeriesOf<F>* single() const {
    static_assert(Declaration(F).labels.empty() && Declaration(F).children == Children::kEager);
    return static_cast<SeriesOf<F>*>(singles_[static_cast<size_t>(F)]);
  }
  const EngineHandles& engine(size_t slot) const { return engines_handles_[slot]; }
  const std::vector<std::string>& engines() const { return engines_; }

 private:
  void RegisterRow(const FamilyDeclaration& d);

  Registry* registry_;
  std::string model_name_;
  std::vector<std::string> engines_;
  int64_t max_model_len_;
  int64_t num_speculative_tokens_;
  OpenGates gates_;
  BucketOverrides bucket_overrides_;
  std::array<Family*, kNumDeclaredFamilies> families_{};
  std::array<Child*, kNumDeclaredFamilies> singles_{};
  std::vector<EngineHandles> engines_handles_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_FAMILY_HANDLES_H_
