#include "metrics/connector_families.h"

#include <algorithm>

#include "vmetrics/kv_connector_stats.h"
#include "vmetrics/metrics_descriptor.h"

namespace vmetrics::internal {
namespace {

// Problems with a payload's descriptor, reported under its class name and the reserved key
// (the reporter logs each distinct one once).
void ReportDescriptorProblem(const DecodeContext& ctx, const ConnectorPayload& p,
                             std::string what) {
  if (ctx.reporter == nullptr) return;
  Problem problem;
  problem.message_number = ctx.message_number;
  problem.offset = static_cast<int64_t>(p.payload_offset);
  problem.connector = p.connector;
  problem.key = kMetricsDescriptorKey;
  problem.what = std::move(what);
  ctx.reporter->Report(problem);
}

}  // namespace

ConnectorRecorder::ConnectorRecorder(Registry* registry, ConnectorCatalog* catalog,
                                     std::string model_name, std::vector<std::string> engines,
                                     std::function<void(const std::string&)> log,
                                     CardinalityGuard* guard)
    : registry_(registry),
      catalog_(catalog),
      model_name_(std::move(model_name)),
      engines_(std::move(engines)),
      log_(std::move(log)),
      guard_(guard) {}

void ConnectorRecorder::RegisterAccounting() {
  FamilySpec spec;
  spec.name = "vmetrics_kv_connector_payloads";
  spec.type = MetricType::kCounter;
  // The HELP is shared with tools/gen_goldens.py; invalid_descriptor (docs/recording.md) is
  // not listed in it yet so the existing goldens stay as they are.
  spec.help =
      "KV-connector payloads received in SchedulerStats.kv_connector_stats, by connector class "
      "name and outcome (recorded, unknown_connector, malformed).";
  spec.label_names = {"connector", "outcome"};
  spec.render_group = 1;
  payloads_family_ = &registry_->AddFamily(std::move(spec));
}

void ConnectorRecorder::Log(const std::string& line) const {
  if (log_) log_(line);
}

ConnectorRecorder::RowState& ConnectorRecorder::StateFor(const ConnectorRow& row) {
  auto it = rows_.find(&row);
  if (it != rows_.end()) return it->second;
  RowState& state = rows_[&row];
  const std::vector<std::string> extra = row.ExtraLabelNames();
  for (const MetricDef& m : row.metrics) {
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
  if (row.children == ChildCreation::kEagerPerEngine && !row.record_shaped()) {
    // Python's create_metric_per_engine: family by family, every engine. A metric with
    // labelnames gets its children from the payload's label tuples instead.
    state.eager.assign(engines_.size(), std::vector<Child*>(row.metrics.size(), nullptr));
    for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
      if (!row.metrics[mi].labelnames.empty()) continue;
      for (size_t e = 0; e < engines_.size(); ++e) {
        std::vector<std::string> values = {model_name_, engines_[e]};
        for (const auto& [unused, v] : row.metrics[mi].const_labels) values.push_back(v);
        state.eager[e][mi] = state.families[mi]->GetOrCreate(values);
      }
    }
  }
  return state;
}

void ConnectorRecorder::Register(const ConnectorRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  StateFor(row);
}

void ConnectorRecorder::Account(const std::string& connector, const char* outcome) {
  auto it = accounting_.find(std::pair<std::string_view, std::string_view>(connector, outcome));
  if (it == accounting_.end()) {
    // The class name comes from the wire: a stream of new names is bounded by the guard.
    const std::string_view values[] = {connector, outcome};
    Child* child = guard_->GetOrCreate(*payloads_family_, values);
    if (child == nullptr) {
      guard_->CountDropped(*payloads_family_);
      return;
    }
    it = accounting_.emplace(std::make_pair(connector, std::string(outcome)), child).first;
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
    if (!row.record_shaped() && mi != metric_index) continue;
    std::vector<std::string_view> values = {model_name_, engines_[engine_slot]};
    values.insert(values.end(), extra.begin(), extra.end());
    for (const auto& [unused, v] : row.metrics[mi].const_labels) values.push_back(v);
    children[mi] = guard_->GetOrCreate(*state.families[mi], values);
    refused = refused || children[mi] == nullptr;
  }
  if (refused) {
    // Not remembered, so the map stays as bounded as the families; the next sample with
    // these values looks again (the refused path is the slow one on purpose).
    refused_children_ = std::move(children);
    return refused_children_;
  }
  return state.lazy.emplace(key, std::move(children)).first->second;
}

Status ConnectorRecorder::CheckRegistryConflicts(const ConnectorRow& row) const {
  // prometheus_client refuses a family one of whose sample names another family already
  // exposes ("Duplicated timeseries"); so does vmetrics, instead of feeding the wrong family.
  std::map<std::string, std::string> taken;  // sample name -> registered family
  for (const Family* f : registry_->Families()) {
    for (std::string& n : ExpositionNames(f->name(), f->type()))
      taken.emplace(std::move(n), f->name());
  }
  for (const MetricDef& m : row.metrics) {
    for (const std::string& n : ExpositionNames(m.name, m.type)) {
      if (auto it = taken.find(n); it != taken.end()) {
        return Status::InvalidArgument("family " + m.name + " conflicts with the registered " +
                                       "family " + it->second + " (both expose " + n + ")");
      }
    }
  }
  return Status::Ok();
}

Status ConnectorRecorder::AdoptDescriptor(const ConnectorPayload& p, const DecodeContext& ctx,
                                          const ConnectorRow** out) {
  Result<ConnectorRow> parsed = ParseMetricsDescriptor(p.descriptor);
  if (!parsed.ok()) return parsed.status();
  ConnectorRow row = std::move(*parsed);
  const std::string& key = p.connector;
  if (row.id != key) {
    // A subclass reporting under its own class name with its parent's descriptor answers to
    // the parent's row (Python registers the parent's families for it).
    if (const ConnectorRow* parent = catalog_->FindByClassName(row.id);
        parent != nullptr && SameMetrics(row, *parent, nullptr)) {
      if (Status s = catalog_->AddAlias(key, row.id); !s.ok()) return s;
      *out = catalog_->FindByClassName(key);
      StateFor(**out);
      Log("connector " + key + " sends the _metrics_descriptor of " + row.id +
          "; it now answers to that connector's row");
      descriptors_seen_[key] = std::string(p.descriptor);
      return Status::Ok();
    }
    ReportDescriptorProblem(
        ctx, p,
        "descriptor connector_id '" + row.id +
            "' differs from the class name; its metrics are bound to the class name");
    row.id = key;
    row.class_names = {key};
  }
  if (Status s = CheckRegistryConflicts(row); !s.ok()) return s;
  if (Status s = catalog_->AddRow(row); !s.ok()) return s;
  *out = catalog_->FindByClassName(key);
  StateFor(**out);
  Log("connector " + key + " described its metrics with _metrics_descriptor; registered " +
      std::to_string((*out)->metrics.size()) + " metric(s) with children for every engine");
  descriptors_seen_[key] = std::string(p.descriptor);
  return Status::Ok();
}

void ConnectorRecorder::CheckDescriptor(const ConnectorPayload& p, const ConnectorRow& row,
                                        const DecodeContext& ctx) {
  auto seen = descriptors_seen_.find(p.connector);
  if (seen != descriptors_seen_.end() && seen->second == p.descriptor) return;
  if (descriptors_seen_.size() < kMaxRemembered || seen != descriptors_seen_.end()) {
    descriptors_seen_[p.connector] = std::string(p.descriptor);
  }
  Result<ConnectorRow> parsed = ParseMetricsDescriptor(p.descriptor);
  if (!parsed.ok()) {
    ReportDescriptorProblem(
        ctx, p,
        "descriptor ignored, the connector already has a row: " + parsed.status().message());
    return;
  }
  std::string difference;
  if (!SameMetrics(*parsed, row, &difference)) {
    ReportDescriptorProblem(
        ctx, p,
        "descriptor differs from the connector's " +
            std::string(row.builtin ? "built-in row" : "registered descriptor") + " (" +
            difference + "); the row is kept");
  }
}

const ConnectorRow* ConnectorRecorder::Resolve(const ConnectorPayload& p, const DecodeContext& ctx,
                                               const char** outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  *outcome = kOutcomeUnknownConnector;
  return ResolveLocked(p, ctx, outcome);
}

const ConnectorRow* ConnectorRecorder::ResolveLocked(const ConnectorPayload& p,
                                                     const DecodeContext& ctx,
                                                     const char** outcome) {
  // A descriptor adopted after this payload was decoded (another thread, or an earlier payload
  // of the same message) has added the row since: look again.
  const ConnectorRow* row = p.row != nullptr ? p.row : catalog_->FindByClassName(p.connector);
  if (!p.descriptor.empty()) {
    if (row != nullptr) {
      CheckDescriptor(p, *row, ctx);
    } else {
      auto refused = refused_.find(p.connector);
      Status s = Status::Ok();
      if (refused != refused_.end() && refused->second.first == p.descriptor) {
        s = Status::InvalidArgument(refused->second.second);  // already reported
      } else {
        s = AdoptDescriptor(p, ctx, &row);
        if (!s.ok()) {
          ReportDescriptorProblem(ctx, p,
                                  "descriptor refused: " + s.message() +
                                      "; payloads of this connector count as invalid_descriptor");
          if (refused_.size() < kMaxRemembered || refused != refused_.end()) {
            refused_[p.connector] = {std::string(p.descriptor), s.message()};
          }
        }
      }
      if (!s.ok()) {
        *outcome = kOutcomeInvalidDescriptor;
        return nullptr;
      }
      refused_.erase(p.connector);
    }
  }
  if (row == nullptr) {
    *outcome =
        refused_.count(p.connector) != 0 ? kOutcomeInvalidDescriptor : kOutcomeUnknownConnector;
  }
  return row;
}

void ConnectorRecorder::Record(const KvConnectorStats& stats, size_t engine_slot,
                               const DecodeContext& ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ConnectorPayload& p : stats.payloads) {
    if (p.malformed) {
      Account(p.connector, kOutcomeMalformed);
      continue;
    }
    const char* outcome = kOutcomeUnknownConnector;
    const ConnectorRow* resolved = ResolveLocked(p, ctx, &outcome);
    if (resolved == nullptr) {
      Account(p.connector, outcome);
      continue;
    }
    const ConnectorRow& row = *resolved;
    if (rows_.find(&row) == rows_.end() && !row.metrics.empty()) {
      // Python registers families only for the configured connector and drops the rest; we
      // register on first sight so the data is visible, and say so once.
      Log("connector " + p.connector +
          " was not configured; registering its families on first sight");
    }
    PayloadRecording rec{p, row, StateFor(row), engine_slot, ctx};
    // The callback captures two pointers, so std::function holds it without allocating.
    ForEachConnectorSample(p, row, ctx,
                           [this, &rec](const ConnectorSample& s) { RecordSample(rec, s); });
    Account(p.connector, kOutcomeRecorded);
  }
}

void ConnectorRecorder::RecordSample(PayloadRecording& rec, const ConnectorSample& s) {
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
    guard_->CountDropped(*state.families[s.metric_index]);
    return;
  }
  const MetricDef& m = rec.row.metrics[s.metric_index];
  // Every write to connector children is under mu_, so the Exclusive updates apply.
  switch (m.type) {
    case MetricType::kHistogram:
      child->ObserveManyExclusive(s.values);
      break;
    case MetricType::kGauge:
      child->Set(s.values.back());  // the last of several sets is the one that stays
      break;
    case MetricType::kCounter:
      for (const double v : s.values) {
        if (child->AddExclusive(v)) continue;
        Problem problem;
        problem.message_number = rec.ctx.message_number;
        problem.connector = rec.payload.connector;
        problem.key = m.samples_path;
        problem.what = "negative or NaN counter increment skipped";
        if (rec.ctx.reporter != nullptr) rec.ctx.reporter->Report(problem);
      }
      break;
  }
}

}  // namespace vmetrics::internal
