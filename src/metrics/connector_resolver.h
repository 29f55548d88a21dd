// SPDX-License-Identifier: Apache-2.0
// File: connector_resolver.h
//
// ConnectorResolver: the one place that owns a recorder's connector catalog. It identifies each
// kv_connector_stats payload with the catalog (connector_identification.h) and settles what
// recording does with it: the row it records with, or why not (the `outcome` of
// vmetrics_kv_connector_payloads_total).
//
// Third-party connectors (`_metrics_descriptor`, metrics_descriptor.h): a payload with no row
// but a descriptor gets a row here, added to the catalog, so the connector's later payloads are
// identified like a built-in one's; `on_adopted` then registers its families. The row is bound
// to the payload's class name: a MultiConnector child key, the configured connector, or (a bare
// payload, nothing configured) the descriptor's connector_id. A descriptor whose connector_id
// differs from that key is re-bound to the key, or, when its connector_id names a row with
// exactly these metrics (a subclass sending its parent's descriptor), the key becomes an alias
// of that row. A descriptor for a class that already has a row is checked against the row and
// any difference reported; the row is kept. A refused descriptor (invalid, or its families
// collide with registered ones) makes every payload of that class count as invalid_descriptor
// until a valid descriptor arrives. Each refusal is reported once with its reason.
//
// Thread safety: not thread-safe; the ConnectorRecorder that holds it serialises every call.
// The catalog itself may be read from any thread (connector_catalog.h).
#ifndef VMETRICS_METRICS_CONNECTOR_RESOLVER_H_
#define VMETRICS_METRICS_CONNECTOR_RESOLVER_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "vmetrics/connector_catalog.h"
#include "vmetrics/connector_identification.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/registry.h"
#include "vmetrics/status.h"

namespace vmetrics::internal {

class ConnectorResolver {
 public:
  // Starts from `catalog`'s rows (a copy, sharing them: rows adopted here go into the copy
  // only). Adopted families are checked against `registry`, which must outlive the resolver.
  // `log` gets what is said once (a row adopted); `on_adopted` is called with every row a
  // descriptor added, or that an alias now answers to.
  ConnectorResolver(const ConnectorCatalog& catalog, const Registry* registry,
                    std::function<void(const std::string&)> log,
                    std::function<void(const ConnectorRow&)> on_adopted);

  const ConnectorCatalog& catalog() const { return catalog_; }

  // Resolve
  //
  // Identifies the payloads of `stats` into `out` and settles each one's row and outcome:
  // kOutcomeRecorded with a row (identified_by kDescriptor when the row came from a
  // descriptor after identification found none), or no row and kOutcomeMalformed,
  // kOutcomeUnknownConnector or kOutcomeInvalidDescriptor.
  void Resolve(const KvConnectorStats& stats, const DecodeContext& ctx, IdentifiedPayloads* out);

 private:
  void ResolveOne(const DecodeContext& ctx, IdentifiedPayload* id);
  Status AdoptDescriptor(const ConnectorPayload& p, const DecodeContext& ctx,
                         const ConnectorRow** out);
  void CheckDescriptor(const ConnectorPayload& p, const ConnectorRow& row,
                       const DecodeContext& ctx);
  Status CheckRegistryConflicts(const ConnectorRow& row) const;
  void Log(const std::string& line) const;

  // Bounds the memory a stream of distinct class names with bad descriptors can take.
  static constexpr size_t kMaxRemembered = 256;

  ConnectorCatalog catalog_;
  const Registry* registry_;
  std::function<void(const std::string&)> log_;
  std::function<void(const ConnectorRow&)> on_adopted_;
  // Class name -> the raw descriptor last checked or adopted for it (skips re-parsing the
  // descriptor every data-parallel engine sends once).
  std::map<std::string, std::string, std::less<>> descriptors_seen_;
  // Class name -> (raw descriptor, why it was refused).
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> refused_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CONNECTOR_RESOLVER_H_
