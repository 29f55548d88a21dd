#include "cardinality_guard.h"

#include <cstdint>

#include "family_handles.h"

namespace vmetrics::internal {

CardinalityGuard::CardinalityGuard(Registry* registry, size_t max_children,
                                   std::function<void(const std::string&)> log)
    : registry_(registry), max_children_(max_children), log_(std::move(log)) {}

Child* CardinalityGuard::GetOrCreate(Family& family,
                                     std::span<const std::string_view> label_values) {
  return family.GetOrCreateBounded(label_values, limit());
}

void CardinalityGuard::CountDropped(const Family& family) {
  const FamilyDeclaration& declared = Declaration(FamilyId::kLabelValuesDropped);
  Counter* counter = nullptr;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = dropped_.find(&family);
    if (it == dropped_.end()) {
      if (!dropped_family_) {
        // Registered here (Gate::kFirstDrop), not with the other vmetrics families: its HELP
        // and TYPE lines appear only once something was dropped, so renderings without drops
        // stay byte-identical to the Python frontend's.
        dropped_family_ = CounterFamily(&registry_->AddFamily(SpecOf(declared, 0)));
      }
      // One child per family that exists: bounded by the families, not by the wire.
      it = dropped_.emplace(&family, dropped_family_.GetOrCreate({family.name()})).first;
      first = true;
    }
    counter = it->second;
  }
  counter->Add(1);
  if (first && log_) {
    log_("family " + family.name() + " reached " + std::to_string(max_children_) +
         " children (--max-label-values-per-family); samples with new label values are "
         "dropped and counted in " +
         std::string(declared.name) + "_total");
  }
}

}  // namespace vmetrics::internal
