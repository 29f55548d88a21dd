// SPDX-License-Identifier: Apache-2.0
// File: connector_payloads.h
//
// Reading kv_connector_stats as the wire lays it out: the top-level entries of its map, and the
// payload of a MultiConnector child (a map under a class-name key, possibly wrapped in the
// pre-September-2026 {"data": {...}}). The protocol library splits a message's
// kv_connector_stats with these when the configuration names the connectors; the metrics
// library's identification (connector_identification.h) uses the same functions when nothing is
// configured and the catalog decides what the map is.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API).
//
// Thread safety: reentrant; the bytes must outlive the entries and payloads made from them.
#ifndef VMETRICS_INTERNAL_CONNECTOR_PAYLOADS_H_
#define VMETRICS_INTERNAL_CONNECTOR_PAYLOADS_H_

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/status.h"

namespace vmetrics::internal {

// One top-level entry of a payload map.
struct PayloadEntry {
  std::string_view key;  // empty if the key is not a str
  protocol::MsgpackType value_type = protocol::MsgpackType::kNil;
  bool value_is_list_of_maps = false;  // non-empty array whose first element is a map
  std::string_view value;              // the raw value
  size_t value_offset = 0;
  // A map value's own `_metrics_descriptor` (a MultiConnector child's), found while scanning.
  std::string_view child_descriptor;
  bool child_scanned = false;  // child_descriptor is known (else look for it)
};

// ScanPayloadEntries
//
// Reads the map at `r` entry by entry into `entries` (cleared first), leaving `r` after the
// map. A map value is walked one level on the way (what skipping it costs), so a child's
// descriptor is found without another pass. Fails as reading the map would (truncation,
// pickle); `entries` then holds the entries read before the failure.
Status ScanPayloadEntries(protocol::MsgpackReader& r, std::vector<PayloadEntry>* entries);

// The entries a shape may look at: every entry but the reserved keys (`data` is cleared
// first).
void DataEntries(std::span<const PayloadEntry> entries, std::vector<PayloadEntry>* data);

// The first entry under `key`, or nullptr.
const PayloadEntry* FindEntry(std::span<const PayloadEntry> entries, std::string_view key);

// True if the map `map` has the str key `wanted` (false if it is not a readable map).
bool MapHasKey(std::string_view map, std::string_view wanted);

// MultiChildPayload
//
// The payload of MultiConnector child `e`, named by its key (PayloadNamedBy::kMultiChildKey):
// unwrapped from {"data": {...}}, malformed when it is not a map (or its key is not a str,
// then named "unknown"), with its `_metrics_descriptor`. Malformed children are reported
// through `ctx`.
ConnectorPayload MultiChildPayload(const PayloadEntry& e, const DecodeContext& ctx);

// Sets p->descriptor to the raw `_metrics_descriptor` value of the map p->payload, if it has
// one (the first of several; one found before a broken entry still counts).
void FindDescriptor(ConnectorPayload* p);

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_CONNECTOR_PAYLOADS_H_
