// SPDX-License-Identifier: Apache-2.0
// metrics_descriptor: `_metrics_descriptor` v1 to ConnectorRow (bounded msgpack reads, nothing
// built from the value before its length is checked) and ConnectorRow to descriptor JSON.
#include "vmetrics/metrics_descriptor.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "row_checks.h"
#include "vmetrics/engine_core_outputs.h"  // the reserved payload keys
#include "vmetrics/internal/msgpack_reader.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics {
namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;
using protocol::MsgpackTypeName;

Status FieldError(const std::string& field, const std::string& what) {
  return Status::InvalidArgument(field + ": " + what);
}

Status WrongType(const std::string& field, const char* expected, MsgpackType got) {
  return FieldError(field, std::string("expected ") + expected + ", got " + MsgpackTypeName(got));
}

// Reads a string at `r` into `out`, bounded by kMaxDescriptorStringBytes.
Status ReadString(MsgpackReader& r, const std::string& field, std::string* out) {
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kStr) return WrongType(field, "a string", t);
  std::string_view v;
  if (Status s = r.ReadStr(&v); !s.ok()) return s;
  if (v.size() > kMaxDescriptorStringBytes) {
    return FieldError(field, "longer than " + std::to_string(kMaxDescriptorStringBytes) + " bytes");
  }
  // msgspec refuses a str that is not UTF-8, so a Python frontend never sees one; text that
  // is not UTF-8 would also end up in HELP lines and label values.
  if (!internal::IsValidUtf8(v)) return FieldError(field, "not valid UTF-8");
  out->assign(v);
  return Status::Ok();
}

// nil counts as an absent optional field: consumes it and returns true.
bool TakeNil(MsgpackReader& r) {
  if (!r.NextIsNil()) return false;
  (void)r.ReadNil();
  return true;
}

Status ReadNumber(MsgpackReader& r, const std::string& field, double* out) {
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kInt && t != MsgpackType::kFloat) return WrongType(field, "a number", t);
  return r.ReadDouble(out);
}

Status ReadArrayHeader(MsgpackReader& r, const std::string& field, size_t limit, uint32_t* n) {
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kArray) return WrongType(field, "a list", t);
  if (Status s = r.ReadArrayHeader(n); !s.ok()) return s;
  if (*n > limit) {
    return FieldError(
        field, std::to_string(*n) + " entries, more than the limit of " + std::to_string(limit));
  }
  return Status::Ok();
}

Status ReadBuckets(MsgpackReader& r, const std::string& field, std::vector<double>* out) {
  uint32_t n;
  if (Status s = ReadArrayHeader(r, field, kMaxDescriptorBuckets, &n); !s.ok()) return s;
  out->clear();
  out->reserve(n);  // bounded by kMaxDescriptorBuckets
  for (uint32_t i = 0; i < n; ++i) {
    double v;
    if (Status s = ReadNumber(r, field + "[" + std::to_string(i) + "]", &v); !s.ok()) return s;
    out->push_back(v);
  }
  return Status::Ok();
}

Status ReadConstLabels(MsgpackReader& r, const std::string& field,
                       std::vector<std::pair<std::string, std::string>>* out) {
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kMap) return WrongType(field, "a map", t);
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  if (n > kMaxDescriptorLabels) {
    return FieldError(field, std::to_string(n) + " labels, more than the limit of " +
                                 std::to_string(kMaxDescriptorLabels));
  }
  out->clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string name, value;
    if (Status s = ReadString(r, field + " key", &name); !s.ok()) return s;
    if (Status s = ReadString(r, std::string(field).append(".").append(name), &value); !s.ok()) {
      return s;
    }
    out->emplace_back(std::move(name), std::move(value));
  }
  return Status::Ok();
}

Status ReadLabelNames(MsgpackReader& r, const std::string& field, std::vector<std::string>* out) {
  uint32_t n;
  if (Status s = ReadArrayHeader(r, field, kMaxDescriptorLabels, &n); !s.ok()) return s;
  out->clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string name;
    if (Status s = ReadString(r, field + "[" + std::to_string(i) + "]", &name); !s.ok()) return s;
    out->push_back(std::move(name));
  }
  return Status::Ok();
}

bool ParseType(std::string_view name, MetricType* type) {
  for (MetricType t : {MetricType::kCounter, MetricType::kGauge, MetricType::kHistogram}) {
    if (name == MetricTypeName(t)) {
      *type = t;
      return true;
    }
  }
  return false;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// One entry of `metrics`. `field` is "metrics[i]".
Status ParseMetric(MsgpackReader& r, const std::string& field, const std::string& connector_id,
                   MetricDef* m) {
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kMap) return WrongType(field, "a map", t);
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  std::optional<std::string> name, type, documentation, samples_path, sample_kind;
  std::optional<std::vector<double>> buckets;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    MsgpackType kt;
    if (Status s = r.PeekType(&kt); !s.ok()) return s;
    if (kt != MsgpackType::kStr) {  // not a field of ours: ignored like an unknown key
      if (Status s = r.Skip(); !s.ok()) return s;
      if (Status s = r.Skip(); !s.ok()) return s;
      continue;
    }
    if (Status s = r.ReadStr(&key); !s.ok()) return s;
    const std::string f = field + "." + std::string(key);
    Status s;
    if (key == "name") {
      s = ReadString(r, f, &name.emplace());
    } else if (key == "type") {
      s = ReadString(r, f, &type.emplace());
    } else if (key == "documentation") {
      if (!TakeNil(r)) s = ReadString(r, f, &documentation.emplace());
    } else if (key == "samples_path") {
      s = ReadString(r, f, &samples_path.emplace());
    } else if (key == "sample_kind") {
      s = ReadString(r, f, &sample_kind.emplace());
    } else if (key == "buckets") {
      if (!TakeNil(r)) s = ReadBuckets(r, f, &buckets.emplace());
    } else if (key == "scale") {
      if (!TakeNil(r)) s = ReadNumber(r, f, &m->scale);
    } else if (key == "const_labels") {
      if (!TakeNil(r)) s = ReadConstLabels(r, f, &m->const_labels);
    } else if (key == "labelnames") {
      if (!TakeNil(r)) s = ReadLabelNames(r, f, &m->labelnames);
    } else {
      s = r.Skip();  // a newer field: ignored
    }
    if (!s.ok()) return s;
  }

  if (!name) return FieldError(field + ".name", "missing");
  if (!type) return FieldError(field + ".type", "missing");
  if (!samples_path) return FieldError(field + ".samples_path", "missing");
  if (!sample_kind) return FieldError(field + ".sample_kind", "missing");
  if (!ParseType(*type, &m->type)) {
    return FieldError(field + ".type", "'" + *type + "' is not counter, gauge or histogram");
  }
  if (!ParseSampleKind(*sample_kind, &m->sample_kind) ||
      m->sample_kind == SampleKind::kIncByOne ||  // internal to record-shaped built-in rows
      m->sample_kind == SampleKind::kSetInfo) {   // internal to built-in rows
    return FieldError(field + ".sample_kind", "'" + *sample_kind + "' is not a sample kind");
  }
  // prometheus_client strips one `_total` from a counter's name and adds it back on samples.
  m->name = std::string(FamilyName(*name, m->type));
  if (m->name.empty()) return FieldError(field + ".name", "empty");
  if (m->name.rfind("vmetrics_", 0) == 0) {
    return FieldError(field + ".name", "'" + m->name +
                                           "': names starting with vmetrics_ are reserved for "
                                           "vmetrics' own families");
  }
  m->samples_path = *samples_path;
  if (buckets) {
    // prometheus_client appends +Inf unless the list already ends with it.
    if (!buckets->empty() && buckets->back() == INFINITY) buckets->pop_back();
    if (m->type != MetricType::kHistogram && !buckets->empty()) {
      return FieldError(field + ".buckets", "only histograms take buckets");
    }
    m->buckets = std::move(*buckets);
  }
  if (m->type == MetricType::kHistogram && m->buckets.empty()) {
    return FieldError(field + ".buckets", "required for histograms");
  }
  if (m->const_labels.size() + m->labelnames.size() > kMaxDescriptorLabels) {
    return FieldError(field, "more than " + std::to_string(kMaxDescriptorLabels) + " labels");
  }
  // HELP: see the header for why one period is stripped and one appended.
  std::string help = documentation.value_or("");
  if (EndsWith(help, ".")) help.pop_back();
  if (help.empty()) help = "KV connector metric " + m->name;
  m->documentation = help + ".";

  // Everything else (name syntax, kind vs type, bucket order, labels, path) is the row check
  // the built-in rows pass too; its message opens with this metric's position.
  ConnectorRow one;
  one.id = connector_id;
  one.builtin = false;
  one.metrics.push_back(*m);
  if (Status s = internal::ValidateRowMetrics(one, ""); !s.ok()) {
    return FieldError(field, s.message());
  }
  return Status::Ok();
}

std::string FormatDouble(double v) { return nlohmann::json(v).dump(); }

template <typename T>
std::string Join(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ",";
    if constexpr (std::is_same_v<T, double>) {
      out += FormatDouble(values[i]);
    } else {
      out += values[i];
    }
  }
  return out + "]";
}

const char* ShapeRuleName(ShapeRule rule) {
  switch (rule) {
    case ShapeRule::kHasKey:
      return "has_key";
    case ShapeRule::kOperationRecords:
      return "operation_records";
    case ShapeRule::kTypedPayload:
      return "typed_payload";
    case ShapeRule::kNever:
      return "never";
  }
  return "never";
}

nlohmann::ordered_json RowJson(const ConnectorRow& row) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["descriptor_version"] = kDescriptorVersion;
  j["connector_id"] = row.id;
  j["class_names"] = row.class_names;
  j["builtin"] = row.builtin;
  j["children"] =
      row.children == ChildCreation::kEagerPerEngine ? "eager_per_engine" : "on_first_record";
  if (row.shape_rule != ShapeRule::kNever) {
    Json shape = {{"rule", ShapeRuleName(row.shape_rule)}};
    if (row.shape_rule == ShapeRule::kHasKey) shape["key"] = row.shape_key;
    j["shape"] = shape;
  }
  if (row.record_shaped()) {
    Json fields = Json::array();
    for (const auto& [name, fallback] : row.record_label_fields) {
      fields.push_back({{"name", name}, {"default", fallback}});
    }
    j["record_labels"] = {{"key", row.record_key_label}, {"fields", fields}};
  }
  Json metrics = Json::array();
  for (const MetricDef& m : row.metrics) {
    if (!m.descriptor_expressible()) continue;  // the descriptor protocol cannot say it
    Json mj;
    // Parsing strips one `_total` from a counter's name: a registered name that itself ends in
    // `_total` is written with the suffix it was sent with, so that it parses back to itself.
    mj["name"] =
        m.type == MetricType::kCounter && EndsWith(m.name, "_total") ? m.name + "_total" : m.name;
    mj["type"] = MetricTypeName(m.type);
    mj["documentation"] = m.documentation;
    if (m.type == MetricType::kHistogram) mj["buckets"] = m.buckets;
    if (!m.samples_path.empty()) mj["samples_path"] = m.samples_path;
    mj["sample_kind"] = SampleKindName(m.sample_kind);
    if (m.scale != 1.0) mj["scale"] = m.scale;
    if (!m.const_labels.empty()) {
      Json labels = Json::object();
      for (const auto& [k, v] : m.const_labels) labels[k] = v;
      mj["const_labels"] = labels;
    }
    if (!m.labelnames.empty()) mj["labelnames"] = m.labelnames;
    metrics.push_back(std::move(mj));
  }
  j["metrics"] = std::move(metrics);
  return j;
}

}  // namespace

Result<ConnectorRow> ParseMetricsDescriptor(std::string_view raw, size_t base_offset) {
  MsgpackReader r(raw, base_offset);
  MsgpackType t;
  if (Status s = r.PeekType(&t); !s.ok()) return s;
  if (t != MsgpackType::kMap) return WrongType(std::string(kMetricsDescriptorKey), "a map", t);
  uint32_t n;
  if (Status s = r.ReadMapHeader(&n); !s.ok()) return s;
  std::optional<int64_t> version;
  std::optional<std::string> connector_id;
  std::optional<MsgpackReader> metrics_at;  // read after the id is known (messages name it)
  for (uint32_t i = 0; i < n; ++i) {
    MsgpackType kt;
    if (Status s = r.PeekType(&kt); !s.ok()) return s;
    std::string_view key;
    if (kt == MsgpackType::kStr) {
      if (Status s = r.ReadStr(&key); !s.ok()) return s;
    } else if (Status s = r.Skip(); !s.ok()) {
      return s;
    }
    Status s;
    if (key == "descriptor_version") {
      MsgpackType vt;
      if (s = r.PeekType(&vt); !s.ok()) return s;
      if (vt != MsgpackType::kInt) return WrongType("descriptor_version", "an int", vt);
      s = r.ReadInt(&version.emplace());
    } else if (key == "connector_id") {
      s = ReadString(r, "connector_id", &connector_id.emplace());
    } else if (key == "metrics") {
      metrics_at = r;
      s = r.Skip();
    } else {
      s = r.Skip();
    }
    if (!s.ok()) return s;
  }
  if (!version) return FieldError("descriptor_version", "missing");
  if (*version != kDescriptorVersion) {
    return FieldError("descriptor_version", "expected " + std::to_string(kDescriptorVersion) +
                                                ", got " + std::to_string(*version));
  }
  if (!connector_id) return FieldError("connector_id", "missing");
  if (connector_id->empty()) return FieldError("connector_id", "empty");
  if (!metrics_at) return FieldError("metrics", "missing");

  ConnectorRow row;
  row.id = *connector_id;
  row.class_names = {*connector_id};
  row.builtin = false;
  row.shape_rule = ShapeRule::kNever;
  row.children = ChildCreation::kEagerPerEngine;
  uint32_t count;
  if (Status s = ReadArrayHeader(*metrics_at, "metrics", kMaxDescriptorMetrics, &count); !s.ok()) {
    return s;
  }
  row.metrics.resize(count);  // bounded by kMaxDescriptorMetrics
  for (uint32_t i = 0; i < count; ++i) {
    const std::string field = "metrics[" + std::to_string(i) + "]";
    if (Status s = ParseMetric(*metrics_at, field, row.id, &row.metrics[i]); !s.ok()) return s;
  }
  // Across metrics: shared family names must agree, sample names must not collide.
  if (Status s = internal::ValidateRowMetrics(row, ""); !s.ok()) {
    return FieldError("metrics", s.message());
  }
  return row;
}

std::string_view PeekDescriptorConnectorId(std::string_view raw) {
  // A key given twice counts by its last value, as ParseMetricsDescriptor (and a Python dict)
  // takes it, so every entry is read.
  MsgpackReader r(raw);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return {};
  std::string_view id;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) {
      if (!r.Skip().ok()) return {};
      key = {};
    }
    if (key == "connector_id") {
      MsgpackReader value = r;
      if (!value.ReadStr(&id).ok()) id = {};
    }
    if (!r.Skip().ok()) return {};
  }
  return id;
}

bool SameMetrics(const ConnectorRow& a, const ConnectorRow& b, std::string* difference) {
  auto differ = [&](const std::string& what) {
    if (difference != nullptr) *difference = what;
    return false;
  };
  // A built-in row's metrics that no descriptor can say (MetricDef::descriptor_expressible)
  // are not compared: the descriptor of a connector describes the rest.
  auto expressible = [](const ConnectorRow& row) {
    std::vector<const MetricDef*> out;
    for (const MetricDef& m : row.metrics) {
      if (m.descriptor_expressible()) out.push_back(&m);
    }
    return out;
  };
  const std::vector<const MetricDef*> am = expressible(a), bm = expressible(b);
  if (am.size() != bm.size()) {
    return differ(std::to_string(am.size()) + " metrics vs " + std::to_string(bm.size()));
  }
  for (size_t i = 0; i < am.size(); ++i) {
    const MetricDef& x = *am[i];
    const MetricDef& y = *bm[i];
    const std::string where = "metric " + std::to_string(i) + " (" + x.name + "): ";
    if (x.name != y.name) return differ(where + "name " + x.name + " vs " + y.name);
    if (x.type != y.type) {
      return differ(where + "type " + MetricTypeName(x.type) + " vs " + MetricTypeName(y.type));
    }
    if (x.documentation != y.documentation) {
      return differ(where + "documentation '" + x.documentation + "' vs '" + y.documentation + "'");
    }
    if (x.buckets != y.buckets) {
      return differ(where + "buckets " + Join(x.buckets) + " vs " + Join(y.buckets));
    }
    if (x.samples_path != y.samples_path) {
      return differ(where + "samples_path " + x.samples_path + " vs " + y.samples_path);
    }
    if (x.sample_kind != y.sample_kind) {
      return differ(where + "sample_kind " + SampleKindName(x.sample_kind) + " vs " +
                    SampleKindName(y.sample_kind));
    }
    if (x.scale != y.scale) {
      return differ(where + "scale " + FormatDouble(x.scale) + " vs " + FormatDouble(y.scale));
    }
    if (x.const_labels != y.const_labels) return differ(where + "const_labels differ");
    if (x.labelnames != y.labelnames) {
      return differ(where + "labelnames " + Join(x.labelnames) + " vs " + Join(y.labelnames));
    }
  }
  return true;
}

std::string DescribeRowAsDescriptorJson(const ConnectorRow& row, int indent) {
  return RowJson(row).dump(indent);
}

std::string DescribeRowsAsDescriptorJson(const ConnectorCatalog::RowList& rows, int indent) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& row : rows) list.push_back(RowJson(*row));
  return list.dump(indent);
}

}  // namespace vmetrics
