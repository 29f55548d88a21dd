// SPDX-License-Identifier: Apache-2.0
// kv_connector_stats split into connector payloads as the configuration and the wire name them:
// the configured connector's payload, the children of a configured MultiConnector, or (nothing
// configured) the whole map, unnamed. No catalog is consulted here; which row each payload
// records with is the metrics library's decision (connector_identification.h). Splitting never
// fails the message: a payload that is not a map is marked malformed and reported, and the
// recorder accounts for it.
#include "vmetrics/internal/connector_payloads.h"

#include <string>
#include <vector>

#include "decode_internal.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics::internal {

using protocol::MsgpackReader;
using protocol::MsgpackType;
using protocol::MsgpackTypeName;

namespace {

// Reads the map at `r` to its end, keeping the raw `_metrics_descriptor` value if there is one.
// False if the map is not well formed (the caller's ReadRaw then gives the error).
bool ScanChildMap(MsgpackReader& r, std::string_view* descriptor) {
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok() && !r.Skip().ok()) return false;
    if (key == kMetricsDescriptorKey && descriptor->empty()) {  // the first one counts
      if (!r.ReadRaw(descriptor).ok()) return false;
    } else if (!r.Skip().ok()) {
      return false;
    }
  }
  return true;
}

// The child payload of a MultiConnector entry, unwrapping the pre-September-2026
// {"data": {...}} shape when the map's only key is "data" and its value is a map.
void FillPayload(std::string_view raw, size_t offset, ConnectorPayload* p) {
  p->payload = raw;
  p->payload_offset = offset;
  MsgpackReader r(raw, offset);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) {
    p->malformed = true;
    return;
  }
  if (n != 1) return;
  std::string_view key;
  MsgpackType t;
  if (!r.ReadStr(&key).ok() || key != "data" || !r.PeekType(&t).ok() || t != MsgpackType::kMap) {
    return;
  }
  size_t inner_offset = r.offset();
  std::string_view inner;
  if (!r.ReadRaw(&inner).ok()) return;
  p->payload = inner;
  p->payload_offset = inner_offset;
  p->data_wrapped = true;
}

}  // namespace

Status ScanPayloadEntries(MsgpackReader& r, std::vector<PayloadEntry>* entries) {
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  entries->clear();
  entries->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    PayloadEntry e;
    MsgpackType kt;
    if (Status s = r.PeekType(&kt); !s.ok()) return s;
    if (kt == MsgpackType::kStr) {
      if (Status s = r.ReadStr(&e.key); !s.ok()) return s;
    } else if (Status s = r.Skip(); !s.ok()) {
      return s;
    }
    if (Status s = r.PeekType(&e.value_type); !s.ok()) return s;
    e.value_offset = r.offset();
    if (e.value_type == MsgpackType::kArray) {
      MsgpackReader a = r;
      uint32_t len;
      MsgpackType first;
      if (a.ReadArrayHeader(&len).ok() && len > 0 && a.PeekType(&first).ok()) {
        e.value_is_list_of_maps = first == MsgpackType::kMap;
      }
    }
    if (e.value_type == MsgpackType::kMap) {
      // A map (a MultiConnector child) is walked one level here, which costs what ReadRaw
      // would and finds its descriptor without another pass over the payload.
      const char* const start = r.position();
      MsgpackReader child = r;
      if (ScanChildMap(child, &e.child_descriptor)) {
        e.value = std::string_view(start, static_cast<size_t>(child.position() - start));
        e.child_scanned = true;
        r = child;
        entries->push_back(e);
        continue;
      }
    }
    e.child_descriptor = {};
    if (Status s = r.ReadRaw(&e.value); !s.ok()) return s;
    entries->push_back(e);
  }
  return Status::Ok();
}

void DataEntries(std::span<const PayloadEntry> entries, std::vector<PayloadEntry>* data) {
  data->clear();
  for (const PayloadEntry& e : entries) {
    if (!IsReservedPayloadKey(e.key)) data->push_back(e);
  }
}

const PayloadEntry* FindEntry(std::span<const PayloadEntry> entries, std::string_view key) {
  for (const PayloadEntry& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

bool MapHasKey(std::string_view map, std::string_view wanted) {
  MsgpackReader r(map);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (r.ReadStr(&key).ok()) {
      if (key == wanted) return true;
    } else if (!r.Skip().ok()) {
      return false;
    }
    if (!r.Skip().ok()) return false;
  }
  return false;
}

void FindDescriptor(ConnectorPayload* p) {
  MsgpackReader r(p->payload, p->payload_offset);
  (void)ScanChildMap(r, &p->descriptor);  // one found before a broken entry still counts
}

ConnectorPayload MultiChildPayload(const PayloadEntry& e, const DecodeContext& ctx) {
  ConnectorPayload p;
  p.named_by = PayloadNamedBy::kMultiChildKey;
  if (e.key.empty()) {
    p.connector = "unknown";
    p.malformed = true;
    p.payload = e.value;
    p.payload_offset = e.value_offset;
    ReportProblem(ctx, static_cast<int64_t>(e.value_offset), "", "",
                  "MultiConnector child key is not a string");
    return p;
  }
  if (!IsValidUtf8(e.key)) {
    // The class name would become a label value of every family the payload feeds (and of
    // vmetrics_kv_connector_payloads_total): one invalid byte makes the scrape unparsable.
    p.connector = "unknown";
    p.malformed = true;
    p.invalid_utf8_name = true;
    p.payload = e.value;
    p.payload_offset = e.value_offset;
    // Counted by its outcome (invalid_utf8), not as a skipped value; the log escapes the bytes.
    ReportProblem(ctx, static_cast<int64_t>(e.value_offset), "", "",
                  "MultiConnector child key is not valid UTF-8: '" +
                      std::string(e.key.substr(0, 64)) + "'; payload refused");
    return p;
  }
  p.connector = e.key;
  FillPayload(e.value, e.value_offset, &p);
  if (p.malformed) {
    ReportProblem(
        ctx, static_cast<int64_t>(e.value_offset), p.connector, "",
        std::string("MultiConnector child must be a map, got ") + MsgpackTypeName(e.value_type));
    return p;
  }
  // Also for known rows: the recorder checks a built-in row against the descriptor a connector
  // sends (HiSparse, HF3FS and Offloading send one).
  if (e.child_scanned && !p.data_wrapped) {
    p.descriptor = e.child_descriptor;
  } else {
    FindDescriptor(&p);
  }
  return p;
}

Status DecodeKvConnectorStats(MsgpackReader& r, const DecodeContext& ctx, KvConnectorStats* out) {
  const ConnectorConfig* config = ctx.connectors;
  *out = KvConnectorStats{};
  const size_t offset = r.offset();
  const char* const start = r.position();
  MsgpackType type;
  if (Status s = r.PeekType(&type); !s.ok()) return s;
  // A map is scanned entry by entry right here (one walk); `raw` is what that walk consumed.
  // The entry lists keep their capacity from message to message (nothing here recurses), up to
  // a few dozen entries: what a hostile map made them hold is not kept past the next message.
  thread_local std::vector<PayloadEntry> entries;
  thread_local std::vector<PayloadEntry> data;
  constexpr size_t kKeptEntries = 64;
  if (entries.capacity() > kKeptEntries) entries = std::vector<PayloadEntry>();
  if (data.capacity() > kKeptEntries) data = std::vector<PayloadEntry>();
  entries.clear();
  if (type == MsgpackType::kMap) {
    MsgpackReader scan = r;
    if (Status s = ScanPayloadEntries(scan, &entries); !s.ok()) {
      return r.ReadRaw(&out->raw);  // the same error ReadRaw would give (truncation, pickle)
    }
    out->raw = std::string_view(start, static_cast<size_t>(scan.position() - start));
    r = scan;
  } else if (Status s = r.ReadRaw(&out->raw); !s.ok()) {
    return s;
  }
  const std::string_view configured =
      config != nullptr && config->configured() ? std::string_view(config->connector) : "";

  if (type != MsgpackType::kMap) {
    ConnectorPayload p;
    p.connector = configured.empty() ? "unknown" : configured;
    p.named_by = configured.empty() ? PayloadNamedBy::kNothing : PayloadNamedBy::kConfigured;
    p.malformed = true;
    p.payload = out->raw;
    p.payload_offset = offset;
    ReportProblem(ctx, static_cast<int64_t>(offset), p.connector, "",
                  std::string("kv_connector_stats must be a map, got ") + MsgpackTypeName(type));
    out->payloads.push_back(p);
    return Status::Ok();
  }

  if (entries.empty()) return Status::Ok();  // nothing happened this step

  if (config == nullptr || !config->is_multi()) {
    // One payload, the whole map: the configured connector's, or (nothing configured) unnamed,
    // for identification to name. Its own descriptor is the map's.
    ConnectorPayload p;
    p.connector = configured;
    p.named_by = configured.empty() ? PayloadNamedBy::kNothing : PayloadNamedBy::kConfigured;
    p.payload = out->raw;
    p.payload_offset = offset;
    if (const PayloadEntry* d = FindEntry(entries, kMetricsDescriptorKey); d != nullptr) {
      p.descriptor = d->value;
    }
    out->payloads.push_back(p);
    return Status::Ok();
  }

  out->multi = true;
  DataEntries(entries, &data);
  out->payloads.reserve(data.size());
  for (const PayloadEntry& e : data) out->payloads.push_back(MultiChildPayload(e, ctx));
  return Status::Ok();
}

}  // namespace vmetrics::internal
