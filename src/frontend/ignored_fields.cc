// SPDX-License-Identifier: Apache-2.0
// Request fields ignored as vLLM ignores them, counted and logged once; see ignored_fields.h.
#include "ignored_fields.h"

#include <utility>

#include "vmetrics/internal/declared_families.h"

namespace vmetrics::frontend {

IgnoredFields::IgnoredFields(Registry* registry, std::function<void(std::string_view)> log)
    : family_(internal::RegisterFamily<internal::FamilyId::kRequestFieldsIgnored>(registry)),
      log_(std::move(log)) {}

void IgnoredFields::Count(std::string_view field) {
  Counter* counter = nullptr;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = children_.find(field); it != children_.end()) {
      counter = it->second;
    } else if (field.size() <= kMaxNameBytes && children_.size() < kMaxNames) {
      counter = family_.GetOrCreate({std::string(field)});
      children_.emplace(std::string(field), counter);
      first = true;
    } else {
      if (other_ == nullptr) other_ = family_.GetOrCreate({"other"});
      counter = other_;
    }
  }
  counter->Add(1);
  if (first && log_) {
    log_("request field `" + std::string(field) +
         "` ignored, as vLLM ignores fields its request models do not declare; counted in " +
         std::string(internal::Declaration(internal::FamilyId::kRequestFieldsIgnored).name) +
         "_total, not logged again");
  }
}

}  // namespace vmetrics::frontend
