// SPDX-License-Identifier: Apache-2.0
#include "cardinality_guard.h"

#include <cstdint>

#include "family_handles.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics::internal {
namespace {

ProblemKind KindOf(LabelRefusal why) {
  switch (why) {
    case LabelRefusal::kInvalidUtf8:
      return ProblemKind::kInvalidUtf8;
    case LabelRefusal::kTooLong:
      return ProblemKind::kLabelValueTooLong;
    case LabelRefusal::kLimit:
      return ProblemKind::kLabelValuesLimit;
    case LabelRefusal::kNone:
      break;
  }
  return ProblemKind::kOther;
}

// How much of a refused value a log line quotes: enough to recognise it, not 100 kB.
constexpr size_t kQuotedBytes = 64;

// The vmetrics_wire_values_skipped_total series of `reason`, as a log line names it.
std::string SkippedSeries(std::string_view reason) {
  return std::string(Declaration(FamilyId::kWireValuesSkipped).name) + "_total{reason=\"" +
         std::string(reason) + "\"}";
}

}  // namespace

CardinalityGuard::CardinalityGuard(Registry* registry, size_t max_children, size_t max_value_bytes,
                                   std::function<void(const std::string&)> log)
    : registry_(registry),
      max_children_(max_children),
      max_value_bytes_(max_value_bytes),
      log_(std::move(log)) {}

Child* CardinalityGuard::GetOrCreate(Family& family, std::span<const std::string_view> label_values,
                                     LabelRefusal* refusal) {
  if (refusal != nullptr) *refusal = LabelRefusal::kNone;
  // An existing child's values were checked when it was created.
  if (Child* c = family.GetOrCreateBounded(label_values, 0)) return c;
  for (std::string_view v : label_values) {
    LabelRefusal why = LabelRefusal::kNone;
    if (max_value_bytes_ != 0 && v.size() > max_value_bytes_) {
      why = LabelRefusal::kTooLong;
    } else if (!IsValidUtf8(v)) {
      why = LabelRefusal::kInvalidUtf8;
    }
    if (why != LabelRefusal::kNone) {
      if (refusal != nullptr) *refusal = why;
      LogRefusal(family, why, v);
      return nullptr;
    }
  }
  Child* c = family.GetOrCreateBounded(label_values, limit());
  if (c == nullptr && refusal != nullptr) *refusal = LabelRefusal::kLimit;
  return c;
}

void CardinalityGuard::LogRefusal(const Family& family, LabelRefusal why, std::string_view value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!logged_.emplace(&family, why).second) return;
  }
  if (!log_) return;
  std::string quoted = EscapeForLog(value.substr(0, kQuotedBytes));
  if (value.size() > kQuotedBytes) quoted += "...";
  if (why == LabelRefusal::kTooLong) {
    log_("family " + family.name() + ": label value of " + std::to_string(value.size()) +
         " bytes refused (--max-label-value-bytes " + std::to_string(max_value_bytes_) + "): \"" +
         quoted + "\"; samples with such values are dropped and counted in " +
         SkippedSeries("label_value_too_long"));
  } else if (why == LabelRefusal::kInvalidUtf8) {
    log_("family " + family.name() + ": label value that is not valid UTF-8 refused: \"" + quoted +
         "\"; samples with such values are dropped and counted in " +
         SkippedSeries("invalid_utf8"));
  }
}

void CardinalityGuard::CountSkipped(ProblemKind kind) {
  if (kind == ProblemKind::kOther) return;
  Counter* counter = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (skipped_.empty()) {
      // Registered on the first skip (Gate::kFirstDrop), every reason's child at once.
      CounterFamily family(
          &registry_->AddFamily(SpecOf(Declaration(FamilyId::kWireValuesSkipped), 0)));
      for (std::string_view reason : kWireSkipReasons) {
        const std::string_view values[] = {reason};
        skipped_.push_back(family.GetOrCreate(values));
      }
    }
    counter = skipped_[static_cast<size_t>(kind) - 1];
  }
  counter->Add(1);
}

void CardinalityGuard::CountDropped(const Family& family, LabelRefusal why) {
  CountSkipped(KindOf(why));
  if (why != LabelRefusal::kLimit) return;  // logged by LogRefusal
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
