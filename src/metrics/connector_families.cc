// SPDX-License-Identifier: Apache-2.0
#include "connector_families.h"

#include <algorithm>
#include <cmath>

namespace vmetrics::internal {

ConnectorRecorder::ConnectorRecorder(Registry* registry, const ConnectorCatalog& catalog,
                                     std::string model_name, std::vector<std::string> engines,
                                     std::function<void(const std::string&)> log,
                                     CardinalityGuard* guard, const ConnectorConfig* connectors)
    : registry_(registry),
      model_name_(std::move(model_name)),
      engines_(std::move(engines)),
      log_(std::move(log)),
      guard_(guard),
      connectors_(connectors),
      // Called under mu_ (Record and Resolve hold it while the resolver adopts a row).
      resolver_(catalog, registry, log_,
                [this](const ConnectorRow& row) { StateFor(row, row.id); }) {}

void ConnectorRecorder::UseAccounting(CounterFamily payloads) {
  std::lock_guard<std::mutex> lock(mu_);
  payloads_ = payloads;
}

void ConnectorRecorder::Log(const std::string& line) const {
  if (log_) log_(line);
}

ConnectorRecorder::RowState& ConnectorRecorder::StateFor(const ConnectorRow& row,
                                                         std::string_view connector) {
  auto it = rows_.find(&row);
  if (it != rows_.end()) return it->second;
  RowState& state = rows_[&row];
  const std::vector<std::string> extra = row.ExtraLabelNames();
  if (connector.empty()) connector = row.id;
  for (const MetricDef& m : row.metrics) {
    // A family Python declares only under some configuration is left out, and keeps no place
    // in the render order (the walk does not feed it either).
    if (!std::ranges::all_of(m.registered_when, [&](const ExtraConfigGate& g) {
          return g.OpenFor(connectors_, connector);
        })) {
      state.families.push_back(nullptr);
      continue;
    }
    FamilySpec spec;
    spec.name = m.name;
    spec.type = m.type;
    spec.help = m.documentation;
    spec.label_names = {"model_name", "engine"};
    spec.label_names.insert(spec.label_names.end(), extra.begin(), extra.end());
    spec.label_names.insert(spec.label_names.end(), m.labelnames.begin(), m.labelnames.end());
    for (const auto& [name, unused] : m.const_labels) spec.label_names.push_back(name);
    spec.buckets = m.buckets;
    // Metrics that share a family name get the family registered first (ValidateRow made
    // sure they describe the same family).
    state.families.push_back(&registry_->AddFamily(std::move(spec)));
  }
  // Which metrics get their children now: every metric of an eager row (a metric with
  // labelnames or an info metric gets them from the payload instead), and the metrics marked
  // eager in any row.
  const size_t n = row.metrics.size();
  std::vector<bool> eager(n, false);
  bool any_eager = false;
  for (size_t mi = 0; mi < n; ++mi) {
    const MetricDef& m = row.metrics[mi];
    eager[mi] =
        state.families[mi] != nullptr &&
        (m.eager || (row.children == ChildCreation::kEagerPerEngine && !row.record_shaped() &&
                     m.labelnames.empty() && m.sample_kind != SampleKind::kSetInfo));
    any_eager = any_eager || eager[mi];
  }
  if (any_eager) {
    // Python's create_metric_per_engine: metric by metric, every engine (so a descriptor's
    // metrics that share a family get their children metric by metric). Metrics marked eager
    // that share a family (Offloading's transfer_type directions) are created engine by engine
    // within it instead, as OffloadPromMetrics.__init__'s nested loop (engine outer) does.
    state.eager.assign(engines_.size(), std::vector<Child*>(n, nullptr));
    auto create = [&](size_t e, size_t mi) {
      if (state.families[mi] == nullptr) return;
      std::vector<std::string> values = {model_name_, engines_[e]};
      for (const auto& [unused, v] : row.metrics[mi].const_labels) values.push_back(v);
      state.eager[e][mi] = state.families[mi]->GetOrCreate(values);
    };
    auto same_marked_family = [&](size_t a, size_t b) {
      return row.metrics[a].eager && row.metrics[b].eager &&
             row.metrics[a].name == row.metrics[b].name;
    };
    for (size_t mi = 0; mi < n; ++mi) {
      if (!eager[mi]) continue;
      if (!row.metrics[mi].eager) {
        for (size_t e = 0; e < engines_.size(); ++e) create(e, mi);
        continue;
      }
      bool family_done = false;
      for (size_t j = 0; j < mi && !family_done; ++j) family_done = same_marked_family(j, mi);
      if (family_done) continue;
      for (size_t e = 0; e < engines_.size(); ++e) {
        for (size_t mj = mi; mj < n; ++mj) {
          if (same_marked_family(mi, mj)) create(e, mj);
        }
      }
    }
  }
  return state;
}

void ConnectorRecorder::Register(const ConnectorRow& row, std::string_view connector) {
  std::lock_guard<std::mutex> lock(mu_);
  StateFor(row, connector);
}

void ConnectorRecorder::Account(std::string_view connector, const char* outcome) {
  auto it = accounting_.find(std::pair<std::string_view, std::string_view>(connector, outcome));
  if (it == accounting_.end()) {
    // The class name comes from the wire: a stream of new names is bounded by the guard.
    const std::string_view values[] = {connector, outcome};
    LabelRefusal why;
    Counter* child = guard_->GetOrCreate(payloads_, values, &why);
    if (child == nullptr) {
      guard_->CountDropped(payloads_.family(), why);
      return;
    }
    it = accounting_.emplace(std::make_pair(std::string(connector), std::string(outcome)), child)
             .first;
  }
  it->second->Add(1);
}

std::vector<Child*>& ConnectorRecorder::LazyChildren(const ConnectorRow& row, RowState& state,
                                                     size_t engine_slot,
                                                     std::span<const std::string_view> extra,
                                                     size_t metric_index) {
  // The key is built in a buffer that keeps its capacity (no allocation per look-up); a record's
  // samples come here once per record (ConnectorSample::label_set), not once per sample.
  // It starts with the engine slot's bytes (fixed width, so no separator is needed), then
  // each label value after a separator.
  std::string& key = key_buffer_;
  key.assign(reinterpret_cast<const char*>(&engine_slot), sizeof engine_slot);
  for (std::string_view v : extra) key.append(1, '\x1f').append(v);
  // Record-shaped rows create all their families' children at once for a new label set
  // (Python's MooncakeStorePromMetrics caches the five together); other lazy rows create only
  // the family that was fed.
  if (!row.record_shaped()) {
    key.append(1, '\x1e').append(reinterpret_cast<const char*>(&metric_index), sizeof metric_index);
  }
  auto it = state.lazy.find(key);
  if (it != state.lazy.end()) return it->second;
  std::vector<Child*> children(row.metrics.size(), nullptr);
  bool refused = false;
  for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
    if ((!row.record_shaped() && mi != metric_index) || state.families[mi] == nullptr) continue;
    std::vector<std::string_view> values = {model_name_, engines_[engine_slot]};
    values.insert(values.end(), extra.begin(), extra.end());
    for (const auto& [unused, v] : row.metrics[mi].const_labels) values.push_back(v);
    LabelRefusal why;
    children[mi] = guard_->GetOrCreate(*state.families[mi], values, &why);
    if (children[mi] == nullptr) {
      refused = true;
      refused_why_ = why;
    }
  }
  if (refused) {
    // Not remembered, so the map stays as bounded as the families; the next sample with
    // these values looks again (the refused path is the slow one on purpose).
    refused_children_ = std::move(children);
    return refused_children_;
  }
  return state.lazy.emplace(key, std::move(children)).first->second;
}

IdentifiedPayloads ConnectorRecorder::Resolve(const KvConnectorStats& stats,
                                              const DecodeContext& ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  IdentifiedPayloads out;
  resolver_.Resolve(stats, ctx, &out);
  return out;
}

void ConnectorRecorder::Record(const KvConnectorStats& stats, size_t engine_slot,
                               const DecodeContext& ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  resolver_.Resolve(stats, ctx, &resolved_);
  for (const IdentifiedPayload& id : resolved_.payloads) {
    const ConnectorPayload& p = id.payload;
    if (id.row == nullptr) {
      Account(p.connector, id.outcome);
      continue;
    }
    const ConnectorRow& row = *id.row;
    if (rows_.find(&row) == rows_.end() && !row.metrics.empty()) {
      // Python registers families only for the configured connector and drops the rest; we
      // register on first sight so the data is visible, and say so once.
      Log("connector " + std::string(p.connector) +
          " was not configured; registering its families on first sight");
    }
    PayloadRecording rec{p, row, StateFor(row, p.connector), engine_slot, ctx};
    // The callback captures two pointers, so std::function holds it without allocating.
    ForEachConnectorSample(p, row, ctx,
                           [this, &rec](const ConnectorSample& s) { RecordSample(rec, s); });
    Account(p.connector, kOutcomeRecorded);
  }
}

void ConnectorRecorder::ReportInfoProblem(const PayloadRecording& rec, const MetricDef& m,
                                          std::string what) {
  if (rec.ctx.reporter == nullptr) return;
  Problem problem;
  problem.message_number = rec.ctx.message_number;
  problem.connector = rec.payload.connector;
  problem.key = m.samples_path;
  problem.what = std::move(what);
  rec.ctx.reporter->Report(problem);
}

void ConnectorRecorder::RecordInfo(PayloadRecording& rec, const ConnectorSample& s) {
  RowState& state = rec.state;
  const MetricDef& m = rec.row.metrics[s.metric_index];
  auto [it, first] = state.info_labels.try_emplace(s.metric_index);
  std::vector<std::string>& declared = it->second;
  if (first) {
    // The first map declares the label names, in its order (Python declares them from the
    // offloading spec, and the manager's map carries the same names in the same order).
    // Names that cannot be label names are dropped; the family keeps its place in the render
    // order (ReplaceFamily), its children appear from this map on.
    for (const std::string_view name : s.extra_label_names) {
      const bool usable = IsValidLabelName(name) && !name.starts_with("__") &&
                          name != "model_name" && name != "engine" && name != "le" &&
                          std::ranges::find(declared, name) == declared.end() &&
                          declared.size() < kMaxInfoLabels;
      if (usable) {
        declared.emplace_back(name);
      } else {
        ReportInfoProblem(rec, m,
                          "label '" + std::string(name) +
                              "' cannot be a label name (invalid, reserved, repeated or past " +
                              std::to_string(kMaxInfoLabels) + "); dropped");
      }
    }
    if (!declared.empty()) {
      FamilySpec spec = state.families[s.metric_index]->spec();
      spec.label_names.insert(spec.label_names.end(), declared.begin(), declared.end());
      state.families[s.metric_index] = &registry_->ReplaceFamily(
          *state.families[s.metric_index], registry_->MakeFamily(std::move(spec)));
    }
  }
  // Aligned to the declared names: a declared name the map lacks is "", a name it has beside
  // them is dropped (Python's _observe_info), each reported.
  std::vector<std::string_view> aligned(declared.size());
  std::vector<bool> filled(declared.size(), false);
  for (size_t i = 0; i < s.extra_label_names.size(); ++i) {
    auto at = std::ranges::find(declared, s.extra_label_names[i]);
    if (at == declared.end()) {
      if (!first) {
        ReportInfoProblem(rec, m,
                          "label '" + std::string(s.extra_label_names[i]) +
                              "' was not declared by the first map; dropped");
      }
      continue;
    }
    const auto k = static_cast<size_t>(at - declared.begin());
    aligned[k] = s.extra_label_values[i];  // the last of repeated names, as a Python dict keeps
    filled[k] = true;
  }
  for (size_t k = 0; k < declared.size(); ++k) {
    if (!filled[k]) ReportInfoProblem(rec, m, "label '" + declared[k] + "' missing; set to \"\"");
  }
  Child* child =
      LazyChildren(rec.row, state, rec.engine_slot, aligned, s.metric_index)[s.metric_index];
  if (child == nullptr) {
    guard_->CountDropped(*state.families[s.metric_index], refused_why_);
    return;
  }
  static_cast<Gauge*>(child)->Set(1);
}

void ConnectorRecorder::RecordSample(PayloadRecording& rec, const ConnectorSample& s) {
  // The walk feeds no metric whose gates are closed; a family left out at registration under
  // another connector name than the payload's (one row, two class names) stays out.
  if (rec.state.families[s.metric_index] == nullptr) return;
  if (rec.row.metrics[s.metric_index].sample_kind == SampleKind::kSetInfo) {
    RecordInfo(rec, s);
    return;
  }
  RowState& state = rec.state;
  Child* child = nullptr;
  if (!state.eager.empty() && s.extra_label_values.empty()) {
    child = state.eager[rec.engine_slot][s.metric_index];
  }
  if (child == nullptr) {
    // Record-shaped rows look every family's children up together, once per record (one
    // label set), and not at all for a record whose labels are the previous record's (most
    // records of one operation share them).
    if (!rec.row.record_shaped()) {
      rec.record_children =
          &LazyChildren(rec.row, state, rec.engine_slot, s.extra_label_values, s.metric_index);
    } else if (s.label_set == 0 || s.label_set != rec.resolved_set) {
      if (!rec.labels_resolved || !std::ranges::equal(s.extra_label_values, resolved_labels_)) {
        rec.record_children =
            &LazyChildren(rec.row, state, rec.engine_slot, s.extra_label_values, s.metric_index);
        rec.labels_resolved = rec.record_children != &refused_children_;
        resolved_labels_.assign(s.extra_label_values.begin(), s.extra_label_values.end());
      }
      rec.resolved_set = s.label_set;
    }
    child = (*rec.record_children)[s.metric_index];
  }
  if (child == nullptr) {
    guard_->CountDropped(*state.families[s.metric_index], refused_why_);
    return;
  }
  const MetricDef& m = rec.row.metrics[s.metric_index];
  // Every write to connector children is under mu_, so the Exclusive updates apply. The
  // child is of its family's type, m.type (StateFor registered the family from m).
  switch (m.type) {
    case MetricType::kHistogram:
      if (std::ranges::all_of(
              s.values, [](double v) { return ObservationProblem(v) == ProblemKind::kOther; })) {
        static_cast<Histogram*>(child)->ObserveManyExclusive(s.values);
        break;
      }
      // A NaN or infinite value from the wire would make the child's _sum NaN (at once or
      // later), which OpenMetrics parsers refuse (reporter.h, ObservationProblem): skipped and
      // counted instead.
      for (const double v : s.values) {
        const ProblemKind kind = ObservationProblem(v);
        if (kind == ProblemKind::kOther) {
          static_cast<Histogram*>(child)->ObserveManyExclusive(std::span<const double>(&v, 1));
          continue;
        }
        Problem problem;
        problem.kind = kind;
        problem.message_number = rec.ctx.message_number;
        problem.connector = rec.payload.connector;
        problem.key = m.samples_path;
        problem.what = kind == ProblemKind::kNanObservation
                           ? "NaN histogram observation skipped"
                           : "infinite histogram observation skipped";
        if (rec.ctx.reporter != nullptr) rec.ctx.reporter->Report(problem);
      }
      break;
    case MetricType::kGauge:
      // The last of several sets is the one that stays.
      static_cast<Gauge*>(child)->Set(s.values.back());
      break;
    case MetricType::kCounter:
      for (const double v : s.values) {
        if (static_cast<Counter*>(child)->AddExclusive(v)) continue;
        Problem problem;
        problem.message_number = rec.ctx.message_number;
        problem.connector = rec.payload.connector;
        problem.key = m.samples_path;
        problem.kind = std::isnan(v) ? ProblemKind::kNanIncrement : ProblemKind::kNegativeIncrement;
        problem.what = "negative or NaN counter increment skipped";
        if (rec.ctx.reporter != nullptr) rec.ctx.reporter->Report(problem);
      }
      break;
    case MetricType::kSummary:
      // Not a connector metric type (the catalog and descriptors take the other three).
      break;
  }
}

}  // namespace vmetrics::internal
