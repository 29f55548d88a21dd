// kv_connector_stats: identify each connector payload (DESIGN.md §3), then walk it with its
// row. Identification never fails the message: a payload that is not a map is marked malformed,
// a class name without a row is an unknown connector, and both are accounted for by the caller.
#include "vmetrics/kv_connector_stats.h"

#include <string>
#include <vector>

#include "protocol/decode_internal.h"

namespace vmetrics {
namespace {
// The reserved key third-party connectors use to describe their metrics (descriptor protocol).
constexpr std::string_view kDescriptorKey = "_metrics_descriptor";
}  // namespace

namespace internal {
namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;
using protocol::MsgpackTypeName;

// One top-level entry of a payload map, as seen by shape inference.
struct Entry {
  std::string_view key;  // empty if the key is not a str
  MsgpackType value_type = MsgpackType::kNil;
  bool value_is_list_of_maps = false;  // non-empty array whose first element is a map
  std::string_view value;
  size_t value_offset = 0;
};

Status ScanEntries(MsgpackReader r, std::vector<Entry>* entries) {
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  entries->clear();
  entries->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Entry e;
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
    if (Status s = r.ReadRaw(&e.value); !s.ok()) return s;
    entries->push_back(e);
  }
  return Status::Ok();
}

bool HasKey(const std::vector<Entry>& entries, std::string_view key) {
  for (const Entry& e : entries) {
    if (e.key == key) return true;
  }
  return false;
}

bool MatchesShape(const ConnectorRow& row, const std::vector<Entry>& entries) {
  switch (row.shape_rule) {
    case ShapeRule::kHasKey:
      return HasKey(entries, row.shape_key);
    case ShapeRule::kOperationRecords: {
      // Every key an operation: a known operation name, or any key whose value is a list of
      // record maps (Python accepts any operation string).
      for (const Entry& e : entries) {
        if (e.key.empty() || e.value_type != MsgpackType::kArray) return false;
        if (!IsKnownStoreOperation(e.key) && !e.value_is_list_of_maps) return false;
      }
      return !entries.empty();
    }
    case ShapeRule::kTypedPayload:
      return HasKey(entries, "types") && HasKey(entries, "data");
    case ShapeRule::kNever:
      return false;
  }
  return false;
}

// A MultiConnector payload maps class names to child maps.
bool LooksLikeMulti(const ConnectorCatalog& catalog, const std::vector<Entry>& entries) {
  bool named = false;
  for (const Entry& e : entries) {
    if (e.key.empty() || e.value_type != MsgpackType::kMap) return false;
    if (catalog.FindByClassName(e.key) != nullptr) named = true;
    if (e.key.size() > 9 && e.key.find("Connector") != std::string_view::npos) named = true;
  }
  return named;
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

void FindDescriptor(ConnectorPayload* p) {
  MsgpackReader r(p->payload, p->payload_offset);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) {
      if (!r.Skip().ok()) return;
      if (!r.Skip().ok()) return;
      continue;
    }
    if (key == kDescriptorKey) {
      (void)r.ReadRaw(&p->descriptor);
      return;
    }
    if (!r.Skip().ok()) return;
  }
}

ConnectorPayload MakePayload(const ConnectorCatalog& catalog, std::string_view name,
                             IdentifiedBy how, std::string_view raw, size_t offset,
                             bool may_be_wrapped) {
  ConnectorPayload p;
  p.connector = std::string(name);
  p.row = catalog.FindByClassName(name);
  p.identified_by = p.row != nullptr ? how : IdentifiedBy::kNone;
  if (may_be_wrapped) {
    FillPayload(raw, offset, &p);
  } else {
    p.payload = raw;
    p.payload_offset = offset;
    MsgpackReader r(raw, offset);
    MsgpackType t;
    p.malformed = !r.PeekType(&t).ok() || t != MsgpackType::kMap;
  }
  if (p.malformed) {
    p.row = nullptr;
    p.identified_by = IdentifiedBy::kNone;
  } else if (p.row == nullptr) {
    FindDescriptor(&p);
  }
  return p;
}

}  // namespace

Status DecodeKvConnectorStats(MsgpackReader& r, const DecodeContext& ctx, KvConnectorStats* out) {
  const ConnectorCatalog& catalog =
      ctx.catalog != nullptr ? *ctx.catalog : ConnectorCatalog::BuiltIn();
  const ConnectorConfig* config = ctx.connectors;
  *out = KvConnectorStats{};
  const size_t offset = r.offset();
  if (Status s = r.ReadRaw(&out->raw); !s.ok()) return s;
  MsgpackReader v(out->raw, offset);
  MsgpackType type;
  if (Status s = v.PeekType(&type); !s.ok()) return s;
  const std::string_view configured =
      config != nullptr && config->configured() ? std::string_view(config->connector) : "";

  if (type != MsgpackType::kMap) {
    ConnectorPayload p;
    p.connector = configured.empty() ? "unknown" : std::string(configured);
    p.malformed = true;
    p.payload = out->raw;
    p.payload_offset = offset;
    ReportProblem(ctx, static_cast<int64_t>(offset), p.connector, "",
                  std::string("kv_connector_stats must be a map, got ") + MsgpackTypeName(type));
    out->payloads.push_back(std::move(p));
    return Status::Ok();
  }

  std::vector<Entry> entries;
  if (Status s = ScanEntries(v, &entries); !s.ok()) return s;
  if (entries.empty()) return Status::Ok();  // nothing happened this step

  bool multi = config != nullptr && config->is_multi();
  if (!configured.empty() && !multi) {
    out->payloads.push_back(
        MakePayload(catalog, configured, IdentifiedBy::kConfigured, out->raw, offset, false));
    return Status::Ok();
  }
  if (!multi) {
    // Nothing configured: infer by shape, in the catalog's row order (see connector_catalog.cc).
    for (const auto& row : catalog.rows()) {
      if (MatchesShape(*row, entries)) {
        ConnectorPayload p = MakePayload(catalog, row->id, IdentifiedBy::kInferredShape,
                                         out->raw, offset, false);
        out->payloads.push_back(std::move(p));
        return Status::Ok();
      }
    }
    multi = LooksLikeMulti(catalog, entries);
    if (!multi) {
      ConnectorPayload p;
      p.connector = "unknown";
      p.payload = out->raw;
      p.payload_offset = offset;
      FindDescriptor(&p);
      ReportProblem(ctx, static_cast<int64_t>(offset), p.connector, "",
                    "payload matches no known connector shape and no connector is configured");
      out->payloads.push_back(std::move(p));
      return Status::Ok();
    }
  }

  out->multi = true;
  const IdentifiedBy how = IdentifiedBy::kMultiChildKey;
  for (const Entry& e : entries) {
    if (e.key.empty()) {
      ConnectorPayload p;
      p.connector = "unknown";
      p.malformed = true;
      p.payload = e.value;
      p.payload_offset = e.value_offset;
      ReportProblem(ctx, static_cast<int64_t>(e.value_offset), "", "",
                    "MultiConnector child key is not a string");
      out->payloads.push_back(std::move(p));
      continue;
    }
    ConnectorPayload p = MakePayload(catalog, e.key, how, e.value, e.value_offset, true);
    if (p.malformed) {
      ReportProblem(ctx, static_cast<int64_t>(e.value_offset), p.connector, "",
                    std::string("MultiConnector child must be a map, got ") +
                        MsgpackTypeName(e.value_type));
    } else if (p.row == nullptr) {
      ReportProblem(ctx, static_cast<int64_t>(e.value_offset), p.connector, "",
                    "no connector row for this class name (unknown connector)");
    }
    out->payloads.push_back(std::move(p));
  }
  return Status::Ok();
}

}  // namespace internal

namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;
using protocol::MsgpackTypeName;

// Reads a number (int or float) at the reader.
bool ReadNumber(MsgpackReader& r, double* out) { return r.ReadDouble(out).ok(); }

// Typed payloads map label tuples to values; the unlabelled value sits under the empty tuple
// (an empty msgpack array as key). Unwraps {(): v} or a sole entry {(x,): v}; returns false if
// the value is not such a map (the reader is then unchanged).
bool UnwrapTupleKeyedMap(MsgpackReader& r, const DecodeContext& ctx, std::string_view connector,
                         std::string_view key) {
  MsgpackReader m = r;
  uint32_t n;
  if (!m.ReadMapHeader(&n).ok() || n == 0) return false;
  MsgpackReader probe = m;
  MsgpackType kt;
  if (!probe.PeekType(&kt).ok() || kt != MsgpackType::kArray) return false;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t arity;
    if (!m.ReadArrayHeader(&arity).ok()) return false;
    for (uint32_t j = 0; j < arity; ++j) {
      if (!m.Skip().ok()) return false;
    }
    if (arity == 0 || n == 1) {
      r = m;
      return true;
    }
    if (!m.Skip().ok()) return false;
  }
  internal::ReportProblem(ctx, static_cast<int64_t>(r.offset()), connector, key,
                          "labelled typed values are not supported yet; field skipped");
  return false;
}

// Applies one metric definition to the value at `r` (which is left unchanged).
size_t ApplyMetric(MsgpackReader r, const ConnectorRow& row, size_t metric_index,
                   const DecodeContext& ctx, std::string_view connector,
                   std::span<const std::string_view> labels, const ConnectorSampleFn& fn) {
  const MetricDef& m = row.metrics[metric_index];
  if (r.NextIsNil()) return 0;
  UnwrapTupleKeyedMap(r, ctx, connector, m.samples_path);
  ConnectorSample sample;
  sample.metric_index = metric_index;
  sample.extra_label_values = labels;
  const double scale = m.type == MetricType::kHistogram ? m.scale : 1.0;
  MsgpackType t;
  if (!r.PeekType(&t).ok()) return 0;
  const bool list_kind = m.sample_kind == SampleKind::kIncBySumU64 ||
                         m.sample_kind == SampleKind::kObserveEachF64 ||
                         m.sample_kind == SampleKind::kObserveEachU64AsF64;
  if (t == MsgpackType::kArray && list_kind) {
    // Check every element first, so a bad element skips the whole field, not part of it.
    MsgpackReader check = r;
    uint32_t n;
    (void)check.ReadArrayHeader(&n);
    for (uint32_t i = 0; i < n; ++i) {
      double v;
      if (!ReadNumber(check, &v)) {
        internal::ReportProblem(ctx, static_cast<int64_t>(check.offset()), connector,
                                m.samples_path, "expected a list of numbers; field skipped");
        return 0;
      }
    }
    (void)r.ReadArrayHeader(&n);
    for (uint32_t i = 0; i < n; ++i) {
      double v = 0;
      ReadNumber(r, &v);
      sample.value = v * scale;
      fn(sample);
    }
    return n;
  }
  if (t == MsgpackType::kInt || t == MsgpackType::kFloat) {
    double v = 0;
    ReadNumber(r, &v);
    sample.value = v * scale;
    fn(sample);
    return 1;
  }
  internal::ReportProblem(ctx, static_cast<int64_t>(r.offset()), connector, m.samples_path,
                          std::string("expected ") + (list_kind ? "a list of numbers" : "a number") +
                              ", got " + MsgpackTypeName(t) + "; field skipped");
  return 0;
}

// Walks `path` (dot-separated) from the map at `r`; on success `r` is at the value.
bool Descend(MsgpackReader& r, std::string_view path) {
  while (true) {
    const size_t dot = path.find('.');
    const std::string_view seg = path.substr(0, dot);
    uint32_t n;
    if (!r.ReadMapHeader(&n).ok()) return false;
    bool found = false;
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      MsgpackReader k = r;
      if (k.ReadStr(&key).ok() && key == seg) {
        r = k;
        found = true;
        break;
      }
      if (!r.Skip().ok() || !r.Skip().ok()) return false;
    }
    if (!found) return false;
    if (dot == std::string_view::npos) return true;
    path = path.substr(dot + 1);
  }
}

// Samples of one map (a flat payload, or one record) for every metric of the row.
size_t WalkMap(std::string_view map, size_t offset, const ConnectorRow& row,
               const DecodeContext& ctx, std::string_view connector,
               std::span<const std::string_view> labels, const ConnectorSampleFn& fn) {
  size_t produced = 0;
  // One pass over the map for single-segment paths (the common case), which keeps the walk
  // linear in the payload size; nested paths (Offloading's data.<name>) descend separately.
  MsgpackReader r(map, offset);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) {
      if (!r.Skip().ok() || !r.Skip().ok()) return produced;
      continue;
    }
    for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
      const MetricDef& m = row.metrics[mi];
      if (m.sample_kind != SampleKind::kIncByOne && m.samples_path == key) produced += ApplyMetric(r, row, mi, ctx, connector, labels, fn);
    }
    if (!r.Skip().ok()) return produced;
  }
  for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
    const MetricDef& m = row.metrics[mi];
    if (m.samples_path.find('.') == std::string::npos) continue;
    MsgpackReader d(map, offset);
    if (Descend(d, m.samples_path)) produced += ApplyMetric(d, row, mi, ctx, connector, labels, fn);
  }
  return produced;
}

// Record-shaped payloads (Mooncake store): {operation: [record, ...]}.
size_t WalkRecords(const ConnectorPayload& p, const DecodeContext& ctx, const ConnectorSampleFn& fn) {
  const ConnectorRow& row = *p.row;
  size_t produced = 0;
  MsgpackReader r(p.payload, p.payload_offset);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return 0;
  std::vector<std::string_view> labels(1 + row.record_label_fields.size());
  std::vector<std::string> label_storage(row.record_label_fields.size());
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view op;
    if (!r.ReadStr(&op).ok()) {
      if (!r.Skip().ok() || !r.Skip().ok()) return produced;
      continue;
    }
    if (op == kDescriptorKey || op == "_n_steps") {
      if (!r.Skip().ok()) return produced;
      continue;
    }
    uint32_t count;
    MsgpackReader list = r;
    if (!list.ReadArrayHeader(&count).ok()) {
      internal::ReportProblem(ctx, static_cast<int64_t>(r.offset()), p.connector, op,
                              "expected a list of records; operation skipped");
      if (!r.Skip().ok()) return produced;
      continue;
    }
    labels[0] = op;
    for (uint32_t j = 0; j < count; ++j) {
      std::string_view record;
      const size_t record_offset = list.offset();
      MsgpackType t;
      if (!list.PeekType(&t).ok() || !list.ReadRaw(&record).ok()) return produced;
      if (t != MsgpackType::kMap) {
        internal::ReportProblem(ctx, static_cast<int64_t>(record_offset), p.connector, op,
                                "expected a record map; record skipped");
        continue;
      }
      // Label fields, read from the record with their defaults (Python: str(record.status)).
      for (size_t f = 0; f < row.record_label_fields.size(); ++f) {
        const auto& [field, fallback] = row.record_label_fields[f];
        labels[1 + f] = fallback;
        MsgpackReader d(record, record_offset);
        if (!Descend(d, field)) continue;
        std::string_view sv;
        int64_t iv;
        MsgpackReader dd = d;
        if (d.ReadStr(&sv).ok()) {
          labels[1 + f] = sv;
        } else if (dd.ReadInt(&iv).ok()) {
          label_storage[f] = std::to_string(iv);
          labels[1 + f] = label_storage[f];
        } else {
          internal::ReportProblem(ctx, static_cast<int64_t>(d.offset()), p.connector, field,
                                  "label field is not a string; default used");
        }
      }
      for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
        if (row.metrics[mi].sample_kind == SampleKind::kIncByOne) {
          ConnectorSample s;
          s.metric_index = mi;
          s.value = 1;
          s.extra_label_values = labels;
          fn(s);
          ++produced;
        }
      }
      produced += WalkMap(record, record_offset, row, ctx, p.connector, labels, fn);
    }
    if (!r.Skip().ok()) return produced;
  }
  return produced;
}

}  // namespace

size_t ForEachConnectorSample(const ConnectorPayload& payload, const DecodeContext& ctx,
                              const ConnectorSampleFn& fn) {
  if (payload.row == nullptr || payload.malformed) return 0;
  if (payload.row->record_shaped()) return WalkRecords(payload, ctx, fn);
  return WalkMap(payload.payload, payload.payload_offset, *payload.row, ctx, payload.connector, {},
                 fn);
}

}  // namespace vmetrics
