// SPDX-License-Identifier: Apache-2.0
// File: connector_identification.h
//
// Which connector row each kv_connector_stats payload records with. Decoding hands out the
// payloads as the configuration and the wire name them (ConnectorPayload: the configured
// connector, a MultiConnector child key, or nothing); identification ties each to a row of the
// connector catalog:
//   - a named payload answers to the row of its class name (connector_catalog.h), or to none
//     (an unknown connector, reported once, unless it carries a `_metrics_descriptor`);
//   - an unnamed payload (no connector configured) is identified by the first rule that holds,
//     in the order connector_catalog.cc lists them ("The built-in rows, in inference order"): its
//     descriptor's connector_id, the rows' shape rules, a MultiConnector map (then each child is
//     identified by its key), the sole row registered at run time; else it is "unknown".
// Identification never fails the message and never changes the catalog; adopting a
// descriptor as a new row is the recorder's ConnectorResolver's business, which then settles
// each payload's outcome (StatsRecorder::ResolveConnectors).
//
// Thread safety: reentrant; the catalog may gain rows concurrently (connector_catalog.h).
//
// Example:
//   IdentifiedPayloads ids;
//   IdentifyConnectorPayloads(*stats.kv_connector_stats, ConnectorCatalog::BuiltIn(), ctx, &ids);
//   EXPECT_EQ(ids.payloads[0].row->id, "NixlConnector");
//   EXPECT_EQ(ids.payloads[0].identified_by, IdentifiedBy::kInferredShape);
#ifndef VMETRICS_CONNECTOR_IDENTIFICATION_H_
#define VMETRICS_CONNECTOR_IDENTIFICATION_H_

#include <cstdint>
#include <vector>

#include "vmetrics/connector_catalog.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {

// How a kv_connector_stats payload was tied to its connector row.
enum class IdentifiedBy : uint8_t {
  kConfigured,     // the configured connector (--kv-transfer-config or the ready response)
  kMultiChildKey,  // the class-name key of a MultiConnector child
  kInferredShape,  // no connector configured; the row's shape rule (or connector_id) matched
  kDescriptor,     // no row when identified: the recorder adopted the payload's descriptor
  kNone,           // no row: unknown connector (or malformed)
};
const char* IdentifiedByName(IdentifiedBy how);  // "configured", "multi_child_key", ...

// Values of the `outcome` label of vmetrics_kv_connector_payloads_total (docs/recording.md).
inline constexpr const char* kOutcomeRecorded = "recorded";
inline constexpr const char* kOutcomeUnknownConnector = "unknown_connector";
inline constexpr const char* kOutcomeMalformed = "malformed";
inline constexpr const char* kOutcomeInvalidDescriptor = "invalid_descriptor";
inline constexpr const char* kOutcomeInvalidUtf8 = "invalid_utf8";  // a name that is not UTF-8

// One payload tied to its row. The payload is named: `connector` is its class name (or
// "unknown"). Views point where the ConnectorPayload's did, or into the row.
struct IdentifiedPayload {
  ConnectorPayload payload;
  const ConnectorRow* row = nullptr;  // nullptr: not recorded (see outcome)
  IdentifiedBy identified_by = IdentifiedBy::kNone;
  // kOutcomeRecorded with a row; else kOutcomeMalformed or kOutcomeUnknownConnector
  // (ConnectorResolver may adopt a descriptor, or settle on kOutcomeInvalidDescriptor).
  const char* outcome = kOutcomeUnknownConnector;
};

struct IdentifiedPayloads {
  bool multi = false;  // the payloads are a MultiConnector's children (configured or inferred)
  std::vector<IdentifiedPayload> payloads;
};

// IdentifyConnectorPayloads
//
// Identifies every payload of `stats` with `catalog` into `out` (cleared first; its vector
// keeps its capacity). Problems (an unknown connector, a map that matches no shape, a
// MultiConnector child that is not a map) go to ctx.reporter.
void IdentifyConnectorPayloads(const KvConnectorStats& stats, const ConnectorCatalog& catalog,
                               const DecodeContext& ctx, IdentifiedPayloads* out);

}  // namespace vmetrics

#endif  // VMETRICS_CONNECTOR_IDENTIFICATION_H_
