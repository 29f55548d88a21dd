// SPDX-License-Identifier: Apache-2.0
#include "family_handles.h"

#include <utility>

#include "buckets.h"
#include "vmetrics/internal/ec_connector_rows.h"

namespace vmetrics::internal {
namespace {

std::vector<double> BucketsOf(BucketSet set, int64_t max_model_len) {
  switch (set) {
    case BucketSet::kNone:
      return {};
    case BucketSet::kTokens125:
      return Build125Buckets(max_model_len);
    case BucketSet::kIterationTokens:
      return IterationTokensBuckets();
    case BucketSet::kRequestParamsN:
      return RequestParamsNBuckets();
    case BucketSet::kTimeToFirstToken:
      return TimeToFirstTokenBuckets();
    case BucketSet::kInterTokenLatency:
      return InterTokenLatencyBuckets();
    case BucketSet::kRequestLatency:
      return RequestLatencyBuckets();
    case BucketSet::kKvResidency:
      return KvResidencyBuckets();
    case BucketSet::kRequestNumPreemptions:
      return RequestNumPreemptionsBuckets();
    case BucketSet::kHttpDurationHighr:
      return HttpDurationHighrBuckets();
    case BucketSet::kHttpDurationLowr:
      return HttpDurationLowrBuckets();
    case BucketSet::kEcCpuTransferSize:
      return EcCpuTransferSizeBuckets();
  }
  return {};
}

// Eager children start at the declared value (only gauges declare one: RowIsConsistent).
void InitialValue(Child* child, double initial) {
  if (initial == 0) return;
  if (Gauge* gauge = child->As<Gauge>()) gauge->Set(initial);
}

}  // namespace

bool EcConnectorOpens(const RecorderOptions& options, Gate gate) {
  const EcConnectorRow* row = FindEcConnectorRow(options.ec_connector.connector);
  return row != nullptr && row->gate == gate;
}

OpenGates OpenGates::For(const RecorderOptions& options) {
  OpenGates gates;
  for (const GateDeclaration& g : kGates) gates.Set(g.gate, g.open != nullptr && g.open(options));
  return gates;
}

FamilySpec SpecOf(const FamilyDeclaration& d, int64_t max_model_len,
                  const BucketOverrides& overrides) {
  FamilySpec spec;
  spec.name = std::string(d.name);
  spec.type = d.type;
  spec.help = std::string(d.help);
  for (std::string_view label : d.labels) spec.label_names.emplace_back(label);
  spec.buckets = BucketsOf(d.buckets, max_model_len);
  const std::string_view key = BucketFamilyKey(d.buckets);
  for (const auto& [family, bounds] : overrides) {
    if (!key.empty() && family == key) spec.buckets = bounds;
  }
  spec.render_group = d.render_group;
  return spec;
}

DeclaredFamilies::DeclaredFamilies(Registry* registry, std::string model_name,
                                   std::vector<std::string> engines, int64_t max_model_len,
                                   int64_t num_speculative_tokens, OpenGates gates,
                                   BucketOverrides bucket_overrides)
    : registry_(registry),
      model_name_(std::move(model_name)),
      engines_(std::move(engines)),
      max_model_len_(max_model_len),
      num_speculative_tokens_(num_speculative_tokens),
      gates_(gates),
      bucket_overrides_(std::move(bucket_overrides)),
      engines_handles_(engines_.size()) {}

void DeclaredFamilies::Register(bool before_connector_rows) {
  for (const FamilyDeclaration& d : kDeclaredFamilies) {
    if (d.before_connector_rows == before_connector_rows && gates_.Open(d.gate)) RegisterRow(d);
  }
}

void DeclaredFamilies::RegisterRow(const FamilyDeclaration& d) {
  Family& family = registry_->AddFamily(SpecOf(d, max_model_len_, bucket_overrides_));
  families_[static_cast<size_t>(d.id)] = &family;
  // The value a label takes for engine `e` (and eager value `v`, the last label's).
  const auto values_for = [&](const std::string& e, std::string_view v) {
    std::vector<std::string_view> values;
    for (const std::string_view label : d.labels) {
      if (label == "model_name") {
        values.push_back(model_name_);
      } else if (label == "engine") {
        values.push_back(e);
      } else {
        values.push_back(v);  // the last label (RowIsConsistent)
      }
    }
    return values;
  };
  const bool has_engine = std::find(d.labels.begin(), d.labels.end(), "engine") != d.labels.end();
  const size_t slot_offset = EngineSlotOffset(d.id);
  const bool has_slots = EngineSlotsOf(d) > 0;
  switch (d.children) {
    case Children::kEager: {
      const EagerValues none = {EagerValue("", d.initial)};
      const EagerValues& eager = d.eager.empty() ? none : d.eager;
      for (size_t vi = 0; vi < eager.size(); ++vi) {
        const EagerValue& v = eager[vi];
        if (!has_engine) {
          Child* child = family.GetOrCreate(values_for("", v.value));
          if (d.labels.empty()) singles_[static_cast<size_t>(d.id)] = child;
          InitialValue(child, v.initial);
          continue;
        }
        for (size_t slot = 0; slot < engines_.size(); ++slot) {
          Child* child = family.GetOrCreate(values_for(engines_[slot], v.value));
          InitialValue(child, v.initial);
          if (has_slots) engines_handles_[slot].slots_[slot_offset + vi] = child;
        }
      }
      break;
    }
    case Children::kEagerPerPosition:
      for (size_t slot = 0; slot < engines_.size(); ++slot) {
        for (int64_t pos = 0; pos < num_speculative_tokens_; ++pos) {
          const std::string position = std::to_string(pos);
          engines_handles_[slot].positions_.push_back(
              family.GetOrCreate(values_for(engines_[slot], position)));
        }
      }
      break;
    case Children::kOnFirstRecord:
    case Children::kLabelsAtRunTime:
    case Children::kByOwner:
      break;
  }
}

}  // namespace vmetrics::internal
