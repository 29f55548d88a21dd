// SPDX-License-Identifier: Apache-2.0
// Identification of kv_connector_stats payloads with the connector catalog (the rules are in
// connector_identification.h and, in their order, connector_catalog.cc).
#include "vmetrics/connector_identification.h"

#include <string>
#include <vector>

#include "vmetrics/internal/connector_payloads.h"
#include "vmetrics/metrics_descriptor.h"

namespace vmetrics {
namespace {

using internal::PayloadEntry;
using protocol::MsgpackReader;
using protocol::MsgpackType;

bool MatchesShape(const ConnectorRow& row, const std::vector<PayloadEntry>& entries) {
  switch (row.shape_rule) {
    case ShapeRule::kHasKey:
      return internal::FindEntry(entries, row.shape_key) != nullptr;
    case ShapeRule::kOperationRecords: {
      // Every key an operation: a known operation name, or any key whose value is a list of
      // record maps (Python accepts any operation string).
      for (const PayloadEntry& e : entries) {
        if (e.key.empty() || e.value_type != MsgpackType::kArray) return false;
        if (!IsKnownStoreOperation(e.key) && !e.value_is_list_of_maps) return false;
      }
      return !entries.empty();
    }
    case ShapeRule::kTypedPayload:
      return internal::FindEntry(entries, "types") != nullptr &&
             internal::FindEntry(entries, "data") != nullptr;
    case ShapeRule::kNever:
      return false;
  }
  return false;
}

// A MultiConnector payload maps class names to child maps. It is one if any entry is a map under
// a key that names a connector: a row's class name, something spelled like a connector class,
// or a child that carries a descriptor (the Rust frontend's rule). Its other entries are then
// children too, a non-map one malformed: one broken child must not hide its siblings.
bool LooksLikeMulti(const ConnectorCatalog& catalog, const std::vector<PayloadEntry>& entries) {
  for (const PayloadEntry& e : entries) {
    if (e.key.empty() || e.value_type != MsgpackType::kMap) continue;
    if (catalog.FindByClassName(e.key) != nullptr) return true;
    if (e.key.size() > 9 && e.key.find("Connector") != std::string_view::npos) return true;
    if (e.child_scanned ? !e.child_descriptor.empty()
                        : internal::MapHasKey(e.value, kMetricsDescriptorKey)) {
      return true;
    }
  }
  return false;
}

// A named payload (configured, a Multi child key): the row of its class name, or none. A payload
// with no row is an unknown connector, unless it carries a descriptor: then the recorder may
// register a row from it (and reports what it decides).
IdentifiedPayload IdentifyNamed(const ConnectorPayload& p, const ConnectorCatalog& catalog,
                                const DecodeContext& ctx) {
  IdentifiedPayload id;
  id.payload = p;
  if (p.malformed) {
    id.outcome = p.invalid_utf8_name ? kOutcomeInvalidUtf8 : kOutcomeMalformed;
    return id;
  }
  id.row = catalog.FindByClassName(p.connector);
  if (id.row != nullptr) {
    id.identified_by = p.named_by == PayloadNamedBy::kConfigured ? IdentifiedBy::kConfigured
                                                                 : IdentifiedBy::kMultiChildKey;
    id.outcome = kOutcomeRecorded;
  } else if (p.descriptor.empty()) {
    ctx.Report(static_cast<int64_t>(p.payload_offset), p.connector, "",
               "no connector row for this class name and no _metrics_descriptor in the payload "
               "(unknown connector)");
  }
  return id;
}

// The unnamed payload `p` named `name` by inference: its row if the catalog has one.
IdentifiedPayload Inferred(const ConnectorPayload& p, std::string_view name,
                           const ConnectorCatalog& catalog) {
  IdentifiedPayload id;
  id.payload = p;
  id.payload.connector = name;
  id.row = catalog.FindByClassName(name);
  if (id.row != nullptr) {
    id.identified_by = IdentifiedBy::kInferredShape;
    id.outcome = kOutcomeRecorded;
  }
  return id;
}

// An unnamed payload, the whole kv_connector_stats map: the rules of connector_catalog.cc ("The
// built-in rows, in inference order"), in that order.
void IdentifyUnnamed(const ConnectorPayload& p, const ConnectorCatalog& catalog,
                     const DecodeContext& ctx, IdentifiedPayloads* out) {
  // The entry lists keep their capacity from message to message, up to a few dozen entries.
  thread_local std::vector<PayloadEntry> entries;
  thread_local std::vector<PayloadEntry> data;
  constexpr size_t kKeptEntries = 64;
  if (entries.capacity() > kKeptEntries) entries = std::vector<PayloadEntry>();
  if (data.capacity() > kKeptEntries) data = std::vector<PayloadEntry>();
  MsgpackReader r(p.payload, p.payload_offset);
  if (!internal::ScanPayloadEntries(r, &entries).ok()) return;  // decoding read it: cannot fail
  internal::DataEntries(entries, &data);
  const std::string_view descriptor = p.descriptor;
  // 0. A descriptor names its connector.
  if (!descriptor.empty()) {
    const std::string_view id = PeekDescriptorConnectorId(descriptor);
    if (!id.empty()) {
      out->payloads.push_back(Inferred(p, id, catalog));
      return;
    }
  }
  // 1-4. Shape rules, in the catalog's row order.
  for (const auto& row : catalog.rows()) {
    if (MatchesShape(*row, data)) {
      out->payloads.push_back(Inferred(p, row->id, catalog));
      return;
    }
  }
  // 5. A MultiConnector payload: each child is identified by its key.
  if (LooksLikeMulti(catalog, data)) {
    out->multi = true;
    out->payloads.reserve(out->payloads.size() + data.size());
    for (const PayloadEntry& e : data) {
      out->payloads.push_back(IdentifyNamed(internal::MultiChildPayload(e, ctx), catalog, ctx));
    }
    return;
  }
  // 6. The sole row registered from a descriptor.
  const ConnectorCatalog::RowList runtime = catalog.RuntimeRows();
  if (runtime.size() == 1 && descriptor.empty()) {
    out->payloads.push_back(Inferred(p, runtime.front()->id, catalog));
    return;
  }
  IdentifiedPayload unknown;
  unknown.payload = p;
  unknown.payload.connector = "unknown";
  ctx.Report(static_cast<int64_t>(p.payload_offset), unknown.payload.connector, "",
             "payload matches no known connector shape and no connector is configured");
  out->payloads.push_back(unknown);
}

}  // namespace

const char* IdentifiedByName(IdentifiedBy how) {
  switch (how) {
    case IdentifiedBy::kConfigured:
      return "configured";
    case IdentifiedBy::kMultiChildKey:
      return "multi_child_key";
    case IdentifiedBy::kInferredShape:
      return "inferred_shape";
    case IdentifiedBy::kDescriptor:
      return "descriptor";
    case IdentifiedBy::kNone:
      return "none";
  }
  return "?";
}

void IdentifyConnectorPayloads(const KvConnectorStats& stats, const ConnectorCatalog& catalog,
                               const DecodeContext& ctx, IdentifiedPayloads* out) {
  out->multi = stats.multi;
  out->payloads.clear();
  for (const ConnectorPayload& p : stats.payloads) {
    if (p.named_by == PayloadNamedBy::kNothing && !p.malformed) {
      IdentifyUnnamed(p, catalog, ctx, out);
    } else {
      out->payloads.push_back(IdentifyNamed(p, catalog, ctx));
    }
  }
}

}  // namespace vmetrics
