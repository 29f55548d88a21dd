// SPDX-License-Identifier: Apache-2.0
#include "connector_resolver.h"

#include <map>
#include <utility>

#include "vmetrics/metrics_descriptor.h"

namespace vmetrics::internal {
namespace {

// Problems with a payload's descriptor, reported under its class name and the reserved key
// (the reporter logs each distinct one once).
void ReportDescriptorProblem(const DecodeContext& ctx, const ConnectorPayload& p,
                             std::string what) {
  ctx.Report(static_cast<int64_t>(p.payload_offset), p.connector, kMetricsDescriptorKey,
             std::move(what));
}

}  // namespace

ConnectorResolver::ConnectorResolver(const ConnectorCatalog& catalog, const Registry* registry,
                                     std::function<void(const std::string&)> log,
                                     std::function<void(const ConnectorRow&)> on_adopted)
    : catalog_(catalog),
      registry_(registry),
      log_(std::move(log)),
      on_adopted_(std::move(on_adopted)) {}

void ConnectorResolver::Log(const std::string& line) const {
  if (log_) log_(line);
}

Status ConnectorResolver::CheckRegistryConflicts(const ConnectorRow& row) const {
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

Status ConnectorResolver::AdoptDescriptor(const ConnectorPayload& p, const DecodeContext& ctx,
                                          const ConnectorRow** out) {
  Result<ConnectorRow> parsed = ParseMetricsDescriptor(p.descriptor);
  if (!parsed.ok()) return parsed.status();
  ConnectorRow row = std::move(*parsed);
  const std::string key(p.connector);
  if (row.id != key) {
    // A subclass reporting under its own class name with its parent's descriptor answers to
    // the parent's row (Python registers the parent's families for it).
    if (const ConnectorRow* parent = catalog_.FindByClassName(row.id);
        parent != nullptr && SameMetrics(row, *parent, nullptr)) {
      if (Status s = catalog_.AddAlias(key, row.id); !s.ok()) return s;
      *out = catalog_.FindByClassName(key);
      on_adopted_(**out);
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
  if (Status s = catalog_.AddRow(row); !s.ok()) return s;
  *out = catalog_.FindByClassName(key);
  on_adopted_(**out);
  Log("connector " + key + " described its metrics with _metrics_descriptor; registered " +
      std::to_string((*out)->metrics.size()) + " metric(s) with children for every engine");
  descriptors_seen_[key] = std::string(p.descriptor);
  return Status::Ok();
}

void ConnectorResolver::CheckDescriptor(const ConnectorPayload& p, const ConnectorRow& row,
                                        const DecodeContext& ctx) {
  auto seen = descriptors_seen_.find(p.connector);
  if (seen != descriptors_seen_.end() && seen->second == p.descriptor) return;
  if (descriptors_seen_.size() < kMaxRemembered || seen != descriptors_seen_.end()) {
    descriptors_seen_[std::string(p.connector)] = std::string(p.descriptor);
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

void ConnectorResolver::ResolveOne(const DecodeContext& ctx, IdentifiedPayload* id) {
  const ConnectorPayload& p = id->payload;
  // A descriptor adopted after this payload was identified (an earlier payload of the same
  // message) has added the row since: look again.
  const ConnectorRow* row = id->row != nullptr ? id->row : catalog_.FindByClassName(p.connector);
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
            refused_[std::string(p.connector)] = {std::string(p.descriptor), s.message()};
          }
        }
      }
      if (!s.ok()) {
        id->outcome = kOutcomeInvalidDescriptor;
        return;
      }
      if (auto it = refused_.find(p.connector); it != refused_.end()) refused_.erase(it);
    }
  }
  if (row == nullptr) {
    id->outcome =
        refused_.contains(p.connector) ? kOutcomeInvalidDescriptor : kOutcomeUnknownConnector;
    return;
  }
  if (id->row == nullptr) id->identified_by = IdentifiedBy::kDescriptor;
  id->row = row;
  id->outcome = kOutcomeRecorded;
}

void ConnectorResolver::Resolve(const KvConnectorStats& stats, const DecodeContext& ctx,
                                IdentifiedPayloads* out) {
  IdentifyConnectorPayloads(stats, catalog_, ctx, out);
  for (IdentifiedPayload& p : out->payloads) {
    if (!p.payload.malformed) ResolveOne(ctx, &p);
  }
}

}  // namespace vmetrics::internal
