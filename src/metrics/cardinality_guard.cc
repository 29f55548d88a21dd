#include "metrics/cardinality_guard.h"

#include <cstdint>

namespace vmetrics::internal {

CardinalityGuard::CardinalityGuard(Registry* registry, size_t max_children,
                                   std::function<void(const std::string&)> log)
    : registry_(registry), max_children_(max_children), log_(std::move(log)) {}

Child* CardinalityGuard::GetOrCreate(Family& family,
                                     std::span<const std::string_view> label_values) {
  return family.GetOrCreateBounded(label_values, max_children_ == 0 ? SIZE_MAX : max_children_);
}

void CardinalityGuard::CountDropped(const Family& family) {
  Child* counter = nullptr;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = dropped_.find(&family);
    if (it == dropped_.end()) {
      if (dropped_family_ == nullptr) {
        // Registered here, not with the other vmetrics families: its HELP and TYPE lines
        // appear only once something was dropped, so renderings without drops stay
        // byte-identical to the Python frontend's.
        FamilySpec spec;
        spec.name = std::string(kLabelValuesDroppedFamily);
        spec.type = MetricType::kCounter;
        spec.help =
            "Samples dropped because they carried a new label value for a family that already "
            "has --max-label-values-per-family children.";
        spec.label_names = {"family"};
        spec.render_group = 1;
        dropped_family_ = &registry_->AddFamily(std::move(spec));
      }
      // One child per family that exists: bounded by the families, not by the wire.
      it = dropped_.emplace(&family, dropped_family_->GetOrCreate({family.name()})).first;
      first = true;
    }
    counter = it->second;
  }
  counter->Add(1);
  if (first && log_) {
    log_("family " + family.name() + " reached " + std::to_string(max_children_) +
         " children (--max-label-values-per-family); samples with new label values are "
         "dropped and counted in " +
         std::string(kLabelValuesDroppedFamily) + "_total");
  }
}

}  // namespace vmetrics::internal
