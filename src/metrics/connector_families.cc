#include "metrics/connector_families.h"

#include "vmetrics/kv_connector_stats.h"

namespace vmetrics::internal {

ConnectorRecorder::ConnectorRecorder(Registry* registry, std::string model_name,
                                     std::vector<std::string> engines,
                                     std::function<void(const std::string&)> log)
    : registry_(registry),
      model_name_(std::move(model_name)),
      engines_(std::move(engines)),
      log_(std::move(log)) {}

void ConnectorRecorder::RegisterAccounting() {
  FamilySpec spec;
  spec.name = "vmetrics_kv_connector_payloads";
  spec.type = MetricType::kCounter;
  spec.help =
      "KV-connector payloads received in SchedulerStats.kv_connector_stats, by connector class "
      "name and outcome (recorded, unknown_connector, malformed).";
  spec.label_names = {"connector", "outcome"};
  spec.render_group = 1;
  payloads_family_ = &registry_->AddFamily(std::move(spec));
}

ConnectorRecorder::RowState& ConnectorRecorder::StateFor(const ConnectorRow& row) {
  auto it = rows_.find(&row);
  if (it != rows_.end()) return it->second;
  RowState& state = rows_[&row];
  std::vector<std::string> labels = {"model_name", "engine"};
  for (const std::string& l : row.ExtraLabelNames()) labels.push_back(l);
  for (const MetricDef& m : row.metrics) {
    FamilySpec spec;
    spec.name = m.name;
    spec.type = m.type;
    spec.help = m.documentation;
    spec.label_names = labels;
    for (const auto& [name, unused] : m.const_labels) spec.label_names.push_back(name);
    spec.buckets = m.buckets;
    state.families.push_back(&registry_->AddFamily(std::move(spec)));
  }
  if (row.children == ChildCreation::kEagerPerEngine && !row.record_shaped()) {
    // Python's create_metric_per_engine: family by family, every engine.
    state.eager.assign(engines_.size(), std::vector<Child*>(row.metrics.size(), nullptr));
    for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
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
  auto key = std::make_pair(connector, std::string(outcome));
  auto it = accounting_.find(key);
  if (it == accounting_.end()) {
    it = accounting_.emplace(key, payloads_family_->GetOrCreate({connector, std::string(outcome)}))
             .first;
  }
  it->second->Add(1);
}

std::vector<Child*>& ConnectorRecorder::LazyChildren(const ConnectorRow& row, RowState& state,
                                                     size_t engine_slot,
                                                     std::span<const std::string_view> extra,
                                                     size_t metric_index) {
  std::string key = std::to_string(engine_slot);
  for (std::string_view v : extra) key.append("\x1f").append(v);
  // Record-shaped rows create all their families' children at once for a new label set
  // (Python's MooncakeStorePromMetrics caches the five together); other lazy rows create only
  // the family that was fed.
  if (!row.record_shaped()) key.append("\x1e").append(std::to_string(metric_index));
  auto it = state.lazy.find(key);
  if (it != state.lazy.end()) return it->second;
  std::vector<Child*> children(row.metrics.size(), nullptr);
  for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
    if (!row.record_shaped() && mi != metric_index) continue;
    std::vector<std::string> values = {model_name_, engines_[engine_slot]};
    for (std::string_view v : extra) values.emplace_back(v);
    for (const auto& [unused, v] : row.metrics[mi].const_labels) values.push_back(v);
    children[mi] = state.families[mi]->GetOrCreate(values);
  }
  return state.lazy.emplace(std::move(key), std::move(children)).first->second;
}

void ConnectorRecorder::Record(const KvConnectorStats& stats, size_t engine_slot,
                               const DecodeContext& ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ConnectorPayload& p : stats.payloads) {
    if (p.malformed) {
      Account(p.connector, "malformed");
      continue;
    }
    if (p.row == nullptr) {
      Account(p.connector, "unknown_connector");
      continue;
    }
    const ConnectorRow& row = *p.row;
    if (rows_.find(&row) == rows_.end() && !row.metrics.empty()) {
      // Python registers families only for the configured connector and drops the rest; we
      // register on first sight so the data is visible, and say so once.
      if (log_) {
        log_("connector " + p.connector +
             " was not configured; registering its families on first sight");
      }
    }
    RowState& state = StateFor(row);
    ForEachConnectorSample(p, ctx, [&](const ConnectorSample& s) {
      Child* child = nullptr;
      if (!state.eager.empty()) {
        child = state.eager[engine_slot][s.metric_index];
      } else {
        child = LazyChildren(row, state, engine_slot, s.extra_label_values, s.metric_index)
                    [s.metric_index];
      }
      const MetricDef& m = row.metrics[s.metric_index];
      switch (m.type) {
        case MetricType::kHistogram:
          child->Observe(s.value);
          break;
        case MetricType::kGauge:
          child->Set(s.value);
          break;
        case MetricType::kCounter:
          if (!child->Add(s.value)) {
            Problem problem;
            problem.message_number = ctx.message_number;
            problem.connector = p.connector;
            problem.key = m.samples_path;
            problem.what = "negative or NaN counter increment skipped";
            if (ctx.reporter != nullptr) ctx.reporter->Report(problem);
          }
          break;
      }
    });
    Account(p.connector, "recorded");
  }
}

}  // namespace vmetrics::internal
