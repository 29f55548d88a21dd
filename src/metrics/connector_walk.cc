// SPDX-License-Identifier: Apache-2.0
// The connector walk: every field of an identified kv_connector_stats payload that its row
// describes, as ConnectorSamples (connector_walk.h). The recorder, `vmetrics decode` and the
// descriptor path all walk payloads here.
//
// Tolerance: docs/design.md §3.3.
//
// Budget: the walk is most of recording a connector payload. W1's MultiConnector message (NIXL
// with 64 transfers, 8 Mooncake store records, 16 Mooncake P2P transfers) walks in 1.91 µs
// (0.70 / 0.85 / 0.39 per connector; bench/README.md, BM_WalkOnly) of the 5.14 µs W1 spends per
// message decoding and recording. A simpler walk is welcome while it stays inside that.
#include "vmetrics/connector_walk.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics {
namespace {

using protocol::MsgpackReader;
using protocol::MsgpackType;
using protocol::MsgpackTypeName;

// True if the bytes of `a` and `b` (of equal size) are equal. Keys are short: compared here,
// eight bytes at a time, rather than through a memcmp call.
bool SameBytes(const char* a, const char* b, size_t n) {
  for (; n >= 8; a += 8, b += 8, n -= 8) {
    uint64_t x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return false;
  }
  for (; n > 0; ++a, ++b, --n) {
    if (*a != *b) return false;
  }
  return true;
}

// True if `path` is the single-segment key `key`.
bool PathIs(const std::string& path, std::string_view key) {
  return path.size() == key.size() && SameBytes(path.data(), key.data(), key.size());
}

// The single-segment metric paths of a row (kIncByOne has none) in a compact array, built once
// per walk: a key is compared with each path's length in one or two cache lines, and its bytes
// only where the length matches, instead of going through every MetricDef.
class KeyIndex {
 public:
  explicit KeyIndex(const ConnectorRow& row) {
    for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
      const MetricDef& m = row.metrics[mi];
      if (m.sample_kind == SampleKind::kIncByOne || m.samples_path.empty() ||
          m.samples_path.find('.') != std::string::npos) {
        continue;
      }
      const Slot slot{m.samples_path.size(), mi, m.samples_path.data()};
      sizes_ |= SizeBit(slot.size);
      if (size_ < inline_.size()) {
        inline_[size_++] = slot;
      } else {
        more_.push_back(slot);
      }
    }
  }

  // Calls fn(metric index) for every metric whose samples_path is `key`, in metric order.
  template <typename Fn>
  void ForEachMetric(std::string_view key, Fn&& fn) const {
    if ((sizes_ & SizeBit(key.size())) == 0) return;  // no path this long (a label field's key)
    for (size_t i = 0; i < size_; ++i) Visit(inline_[i], key, fn);
    for (const Slot& slot : more_) Visit(slot, key, fn);
  }

 private:
  struct Slot {
    size_t size;
    size_t metric_index;
    const char* path;
  };
  template <typename Fn>
  static void Visit(const Slot& slot, std::string_view key, Fn& fn) {
    if (slot.size == key.size() && SameBytes(slot.path, key.data(), key.size())) {
      fn(slot.metric_index);
    }
  }
  static uint64_t SizeBit(size_t size) { return uint64_t{1} << (size % 64); }
  std::array<Slot, 16> inline_;
  size_t size_ = 0;
  uint64_t sizes_ = 0;      // SizeBit of every path's length
  std::vector<Slot> more_;  // rows with more than 16 such metrics (descriptor rows)
};

// What a record's key at one position means to the row: the label field it names and the
// metrics it feeds. The records of a payload repeat their keys in one order (a Mooncake store
// record's five), so the meaning is remembered per position and the next record's key there is
// compared with one key instead of being looked up among the row's label fields and metrics.
struct KeyMeaning {
  static constexpr size_t kMaxMetrics = 4;
  static constexpr uint32_t kRememberedPositions = 32;
  std::string_view key;  // the key it was worked out for (in the walked payload's bytes)
  bool known = false;    // false: nothing remembered at this position
  int label_field = -1;  // index into row.record_label_fields, or -1
  uint8_t metric_count = 0;
  std::array<uint32_t, kMaxMetrics> metrics{};  // in metric order
};

// WalkRecords' buffers: a record's labels, and where its keys put a metric's value.
struct RecordScratch {
  struct Found {
    size_t metric_index;
    MsgpackReader at;
  };
  std::vector<std::string_view> labels;    // the operation, then each record label field
  std::vector<std::string> label_storage;  // label fields that were ints, as text
  std::vector<Found> found;
  std::vector<uint8_t> label_seen;   // per record label field
  std::vector<KeyMeaning> meanings;  // per key position; valid during one payload's walk
};

// The buffers a walk fills, kept from walk to walk so that a payload allocates nothing: this
// thread's, unless a walk on this thread is using them (a walk started inside a callback), which
// then gets empty buffers of its own. Samples point into them only during their callback.
struct WalkBuffers {
  std::vector<double> values;  // a list's values, read before any is applied
  RecordScratch records;
};
class BorrowedWalkBuffers {
 public:
  BorrowedWalkBuffers() : borrowed_(!busy_) { busy_ = true; }
  ~BorrowedWalkBuffers() {
    if (borrowed_) busy_ = false;
  }
  BorrowedWalkBuffers(const BorrowedWalkBuffers&) = delete;
  BorrowedWalkBuffers& operator=(const BorrowedWalkBuffers&) = delete;
  WalkBuffers& get() { return borrowed_ ? shared_ : own_; }

 private:
  static inline thread_local WalkBuffers shared_;
  static inline thread_local bool busy_ = false;
  const bool borrowed_;
  WalkBuffers own_;  // empty vectors: nothing allocated unless used
};

// Where one walk is: the payload's connector (for reports), the context, the callback.
struct Walk {
  const ConnectorRow& row;
  const DecodeContext& ctx;
  std::string_view connector;
  const ConnectorSampleFn& fn;
  WalkBuffers& buffers;
  const KeyIndex& keys;
  uint32_t label_set = 0;            // ConnectorSample::label_set of the samples being made
  bool nested_metric_paths = false;  // some metric's samples_path has several segments
  bool nested_label_fields = false;  // some record label field has several segments
  // A metric reading a value that an earlier metric of the row has read (and reported on)
  // already: its problems are not reported again.
  bool muted = false;

  void Report(int64_t offset, std::string_view key, std::string what,
              ProblemKind kind = ProblemKind::kOther) const {
    if (muted) return;
    ctx.Report(offset, connector, key, std::move(what), kind);
  }
};

bool IsListKind(SampleKind kind) {
  return kind == SampleKind::kIncBySumU64 || kind == SampleKind::kObserveEachF64 ||
         kind == SampleKind::kObserveEachU64AsF64;
}

// Applies a plain value (a number, or a list of numbers for the list kinds) at `r` to metric
// `mi`, with these extra label values (and their ConnectorSample::label_set), as one sample; on
// success `r` is left after the value. Returns the number of values.
size_t ApplyValue(MsgpackReader& r, const Walk& w, size_t mi,
                  std::span<const std::string_view> labels, uint32_t label_set) {
  const MetricDef& m = w.row.metrics[mi];
  const double scale = m.type == MetricType::kHistogram ? m.scale : 1.0;
  MsgpackType t;
  if (!r.PeekType(&t).ok()) return 0;
  const bool list_kind = IsListKind(m.sample_kind);
  std::vector<double>& values = w.buffers.values;
  values.clear();
  if (t == MsgpackType::kArray && list_kind) {
    // Every element is read before any is applied, so a bad element skips the whole field,
    // not part of it.
    MsgpackReader list = r;
    uint32_t n;
    (void)list.ReadArrayHeader(&n);
    if (!list.ReadNumbers(n, &values).ok()) {
      w.Report(static_cast<int64_t>(list.offset()), m.samples_path,
               "expected a list of numbers; field skipped", ProblemKind::kWrongType);
      return 0;
    }
    if (scale != 1.0) {
      for (double& v : values) v *= scale;
    }
    r = list;
  } else if (t == MsgpackType::kInt || t == MsgpackType::kFloat) {
    double v = 0;
    if (!r.ReadDouble(&v).ok()) return 0;
    values.push_back(v * scale);
  } else {
    w.Report(static_cast<int64_t>(r.offset()), m.samples_path,
             std::string("expected ") + (list_kind ? "a list of numbers" : "a number") + ", got " +
                 MsgpackTypeName(t) + "; field skipped",
             ProblemKind::kWrongType);
    return 0;
  }
  if (values.empty()) return 0;
  w.fn(ConnectorSample{mi, values, labels, label_set});
  return values.size();
}

// A map whose keys are msgpack arrays: a typed value keyed by label-value tuples.
bool IsTupleKeyedMap(MsgpackReader r, uint32_t* entries) {
  MsgpackType t;
  if (!r.PeekType(&t).ok() || t != MsgpackType::kMap || !r.ReadMapHeader(entries).ok()) {
    return false;
  }
  if (*entries == 0) return true;  // no values this step
  return r.PeekType(&t).ok() && t == MsgpackType::kArray;
}

enum class TupleRead : uint8_t { kOk, kBadValue, kBroken };

// Reads one label-value tuple (Python str() of each element: str as is, int in decimal).
// kBadValue: an element is neither (the entry can be skipped); kBroken: the key is not an array
// or cannot be read (the rest of the map cannot be trusted).
TupleRead ReadTuple(MsgpackReader& r, std::vector<std::string>* values) {
  uint32_t arity;
  values->clear();
  if (!r.ReadArrayHeader(&arity).ok()) return TupleRead::kBroken;
  TupleRead result = TupleRead::kOk;
  for (uint32_t i = 0; i < arity; ++i) {
    std::string_view sv;
    int64_t iv;
    if (MsgpackReader probe = r; probe.ReadStr(&sv).ok()) {
      values->emplace_back(sv);
      r = probe;
    } else if (probe = r; probe.ReadInt(&iv).ok()) {
      values->push_back(std::to_string(iv));
      r = probe;
    } else if (r.Skip().ok()) {
      values->emplace_back();
      result = TupleRead::kBadValue;
    } else {
      return TupleRead::kBroken;
    }
  }
  return result;
}

std::string TupleText(const std::vector<std::string>& values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", '" : "'") + values[i] + "'";
  return s + ")";
}

// A typed value keyed by label tuples (see the header for what is read and what is reported).
size_t ApplyTyped(MsgpackReader r, uint32_t entries, const Walk& w, size_t mi) {
  const MetricDef& m = w.row.metrics[mi];
  (void)r.ReadMapHeader(&entries);
  size_t produced = 0;
  std::vector<std::string> values;
  std::vector<std::string_view> views;
  for (uint32_t i = 0; i < entries; ++i) {
    const int64_t at = static_cast<int64_t>(r.offset());
    const TupleRead read = ReadTuple(r, &values);
    if (read == TupleRead::kBroken) {
      w.Report(at, m.samples_path,
               "typed value with a key that is not a label tuple; rest skipped");
      return produced;
    }
    MsgpackReader value = r;
    if (!r.Skip().ok()) return produced;
    if (read == TupleRead::kBadValue) {
      w.Report(at, m.samples_path, "label value that is neither a string nor an int; entry skipped",
               ProblemKind::kWrongType);
      continue;
    }
    if (!m.labelnames.empty()) {
      if (values.size() != m.labelnames.size()) {
        w.Report(at, m.samples_path,
                 "label tuple of " + std::to_string(values.size()) +
                     " values, the metric declares " + std::to_string(m.labelnames.size()) +
                     " labelnames; entry skipped");
        continue;
      }
      views.assign(values.begin(), values.end());
      produced += ApplyValue(value, w, mi, views, 0);
    } else if (values.empty()) {
      produced += ApplyValue(value, w, mi, {}, 0);
    } else if (entries == 1) {
      // The Rust frontend reads a sole entry whatever its tuple; its label values are lost.
      w.Report(at, m.samples_path,
               "labelled value " + TupleText(values) +
                   " but the metric declares no labelnames; recorded without its labels");
      produced += ApplyValue(value, w, mi, {}, 0);
    } else {
      w.Report(at, m.samples_path,
               "labelled values but the metric declares no labelnames; labelled entries skipped");
    }
  }
  return produced;
}

// Python's str() of a float (repr's shortest round-trip digits, scientific below 1e-4 and from
// 1e16 on), for a label value; the exposition's formatter is not reachable from here.
std::string PyFloatStr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char sci[32];
  const std::to_chars_result r =
      std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific);
  const std::string_view text(sci, static_cast<size_t>(r.ptr - sci));
  const size_t e = text.find('e');
  std::string mantissa(text.substr(0, e));
  const int exp = std::stoi(std::string(text.substr(e + 1)));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const std::string magnitude = std::to_string(exp < 0 ? -exp : exp);
    return out + (magnitude.size() < 2 ? "0" : "") + magnitude;
  }
  if (exp < 0) return out + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const auto point = static_cast<size_t>(exp) + 1;
  if (digits.size() <= point) return out + digits + std::string(point - digits.size(), '0') + ".0";
  return out + digits.substr(0, point) + "." + digits.substr(point);
}

// A kSetInfo map at `r`: one sample with the value 1 whose labels are the map's entries (names
// in ConnectorSample::extra_label_names). Values become Python's str() of them (str as is, int
// in decimal, bool True/False, nil None, float as repr); a key that is not a string, or a value
// of another type, skips the whole map (reported), since a partial map would be taken for
// missing facts.
size_t ApplyInfo(MsgpackReader& r, const Walk& w, size_t mi) {
  const MetricDef& m = w.row.metrics[mi];
  MsgpackType t;
  uint32_t entries = 0;
  MsgpackReader map = r;
  if (!map.PeekType(&t).ok() || t != MsgpackType::kMap || !map.ReadMapHeader(&entries).ok()) {
    w.Report(static_cast<int64_t>(r.offset()), m.samples_path,
             std::string("expected a map of label values, got ") +
                 (map.PeekType(&t).ok() ? MsgpackTypeName(t) : "nothing") + "; skipped",
             ProblemKind::kWrongType);
    return 0;
  }
  std::vector<std::string> names, values;
  for (uint32_t i = 0; i < entries; ++i) {
    const int64_t at = static_cast<int64_t>(map.offset());
    std::string_view key, sv;
    int64_t iv;
    uint64_t uv;
    double dv;
    bool bv;
    if (!map.ReadStr(&key).ok()) {
      w.Report(at, m.samples_path, "a label name that is not a string; map skipped",
               ProblemKind::kWrongType);
      return 0;
    }
    if (!map.PeekType(&t).ok()) return 0;
    Status read = Status::Ok();
    std::string value;
    switch (t) {
      case MsgpackType::kStr:
        read = map.ReadStr(&sv);
        value = sv;
        break;
      case MsgpackType::kInt:
        if (MsgpackReader probe = map; probe.ReadInt(&iv).ok()) {
          map = probe;
          value = std::to_string(iv);
        } else {
          read = map.ReadUint(&uv);
          value = std::to_string(uv);
        }
        break;
      case MsgpackType::kBool:
        read = map.ReadBool(&bv);
        value = bv ? "True" : "False";
        break;
      case MsgpackType::kNil:
        read = map.ReadNil();
        value = "None";
        break;
      case MsgpackType::kFloat:
        read = map.ReadDouble(&dv);
        value = PyFloatStr(dv);
        break;
      default:
        w.Report(at, m.samples_path,
                 "label '" + std::string(key) + "' has a value of type " + MsgpackTypeName(t) +
                     "; map skipped",
                 ProblemKind::kWrongType);
        return 0;
    }
    if (!read.ok()) return 0;
    names.emplace_back(key);
    values.push_back(std::move(value));
  }
  r = map;
  const std::vector<std::string_view> name_views(names.begin(), names.end());
  const std::vector<std::string_view> value_views(values.begin(), values.end());
  const double one[] = {1.0};
  ConnectorSample sample{mi, one, value_views, 0};
  sample.extra_label_names = name_views;
  w.fn(sample);
  return 1;
}

// Whether metric `m` is fed for this payload: its gates (if any) are open under the
// configuration of the payload's connector. A family not registered under that configuration
// is not fed (Python has no such metric to feed).
bool Fed(const MetricDef& m, const Walk& w) {
  for (const ExtraConfigGate& g : m.registered_when) {
    if (!g.OpenFor(w.ctx.connectors, w.connector)) return false;
  }
  return !m.fed_when || m.fed_when->OpenFor(w.ctx.connectors, w.connector);
}

// Applies metric `mi` to the value at `r`. A plain value that was applied leaves `r` after it;
// otherwise (nil, typed maps, skipped fields) `r` is unchanged and the caller skips the value.
size_t ApplyMetric(MsgpackReader& r, const Walk& w, size_t mi,
                   std::span<const std::string_view> labels) {
  const MetricDef& m = w.row.metrics[mi];
  if (r.NextIsNil()) return 0;
  if (!Fed(m, w)) return 0;
  if (m.sample_kind == SampleKind::kSetInfo) return ApplyInfo(r, w, mi);
  if (double v; m.labelnames.empty() && r.NextIsNumber() && r.ReadDouble(&v).ok()) {
    // A plain number (a record's fields, the failure counts): what ApplyValue would do with
    // it, without looking for a list or a typed map first.
    const double value[] = {m.type == MetricType::kHistogram ? v * m.scale : v};
    w.fn(ConnectorSample{mi, value, labels, w.label_set});
    return 1;
  }
  uint32_t entries = 0;
  if (IsTupleKeyedMap(r, &entries)) return ApplyTyped(r, entries, w, mi);
  if (!m.labelnames.empty()) {
    w.Report(static_cast<int64_t>(r.offset()), m.samples_path,
             "the metric declares labelnames but the value is not keyed by label tuples; field "
             "skipped");
    return 0;
  }
  return ApplyValue(r, w, mi, labels, w.label_set);
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

// IsReservedPayloadKey for the walk: every reserved key starts with '_'.
static_assert(kMetricsDescriptorKey[0] == '_' && kNStepsKey[0] == '_');
bool IsReserved(std::string_view key) {
  return !key.empty() && key[0] == '_' && IsReservedPayloadKey(key);
}

// Metrics whose path has several segments (Offloading's data.<name>) descend from the map's
// start; `map` is a reader at the map.
size_t ApplyNestedPaths(const MsgpackReader& map, const Walk& w,
                        std::span<const std::string_view> labels) {
  if (!w.nested_metric_paths) return 0;
  size_t produced = 0;
  for (size_t mi = 0; mi < w.row.metrics.size(); ++mi) {
    const MetricDef& m = w.row.metrics[mi];
    if (m.samples_path.find('.') == std::string::npos) continue;
    MsgpackReader d = map;
    if (!Descend(d, m.samples_path)) continue;
    // Offloading's deprecated families read the values of the flat ones: one report per value.
    bool read_before = false;
    for (size_t j = 0; j < mi && !read_before; ++j) {
      read_before = w.row.metrics[j].samples_path == m.samples_path && Fed(w.row.metrics[j], w);
    }
    if (read_before) {
      Walk quiet = w;
      quiet.muted = true;
      produced += ApplyMetric(d, quiet, mi, labels);
    } else {
      produced += ApplyMetric(d, w, mi, labels);
    }
  }
  return produced;
}

// Samples of a flat payload map at `r` for every metric of the row, in one pass over the map
// for single-segment paths (the common case); a list that was applied is not skipped again.
size_t WalkMap(MsgpackReader r, const Walk& w) {
  const MsgpackReader map = r;
  size_t produced = 0;
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.ReadStr(&key).ok()) {
      if (!r.Skip().ok() || !r.Skip().ok()) return produced;
      continue;
    }
    if (!IsReserved(key)) {  // ValidateRow keeps metrics off them; stated here too
      MsgpackReader end = r;
      w.keys.ForEachMetric(key, [&](size_t mi) {
        MsgpackReader value = r;
        produced += ApplyMetric(value, w, mi, {});
        if (value.position() != r.position()) end = value;  // read to its end
      });
      if (end.position() != r.position()) {
        r = end;
        continue;
      }
    }
    if (!r.Skip().ok()) return produced;
  }
  return produced + ApplyNestedPaths(map, w, {});
}

// Reads a record's label field value at `r` into labels[slot] (Python: str(record.status)).
void ReadLabelField(MsgpackReader r, const Walk& w, std::string_view field, std::string_view* label,
                    std::string* storage) {
  std::string_view sv;
  int64_t iv;
  MsgpackReader as_int = r;
  if (r.ReadStr(&sv).ok()) {
    *label = sv;
  } else if (as_int.ReadInt(&iv).ok()) {
    *storage = std::to_string(iv);
    *label = *storage;
  } else {
    w.Report(static_cast<int64_t>(r.offset()), field, "label field is not a string; default used",
             ProblemKind::kWrongType);
  }
}

// Calls on_label(f) for each record label field `key` names and on_metric(mi) for each metric
// it feeds, in that order: what a record's key means to w.row.
template <typename OnLabel, typename OnMetric>
void ForEachMeaning(std::string_view key, const Walk& w, OnLabel&& on_label, OnMetric&& on_metric) {
  const auto& fields = w.row.record_label_fields;
  for (size_t f = 0; f < fields.size(); ++f) {
    if (PathIs(fields[f].first, key)) on_label(f);
  }
  if (!IsReserved(key)) w.keys.ForEachMetric(key, on_metric);
}

// ForEachMeaning's answer for `key`, kept; not `known` if it names several label fields or more
// metrics than a KeyMeaning holds (the caller then asks ForEachMeaning every time).
KeyMeaning WorkOutMeaning(std::string_view key, const Walk& w) {
  KeyMeaning meaning;
  meaning.key = key;
  meaning.known = true;
  ForEachMeaning(
      key, w,
      [&](size_t f) {
        meaning.known = meaning.known && meaning.label_field < 0;
        meaning.label_field = static_cast<int>(f);
      },
      [&](size_t mi) {
        if (meaning.metric_count == KeyMeaning::kMaxMetrics) {
          meaning.known = false;
          return;
        }
        meaning.metrics[meaning.metric_count++] = static_cast<uint32_t>(mi);
      });
  return meaning;
}

// One record at `r` (a map; `r` is left after it). Its labels come first — the operation in
// labels[0], then each record label field with its default — so the record's keys are read in
// one pass that notes where each metric's value is, and the values are applied after it.
size_t WalkRecord(MsgpackReader& r, Walk& w, std::span<std::string_view> labels,
                  std::span<std::string> label_storage, RecordScratch& scratch) {
  const ConnectorRow& row = w.row;
  const MsgpackReader record = r;
  MsgpackReader cur = r;  // `r` moves only once the record was read
  std::vector<RecordScratch::Found>& found = scratch.found;
  found.clear();
  std::vector<uint8_t>& label_seen = scratch.label_seen;
  label_seen.assign(row.record_label_fields.size(), 0);
  for (size_t f = 0; f < row.record_label_fields.size(); ++f) {
    labels[1 + f] = row.record_label_fields[f].second;
  }
  uint32_t n;
  if (!cur.ReadMapHeader(&n).ok()) return 0;
  std::vector<KeyMeaning>& meanings = scratch.meanings;
  const auto read_label = [&](size_t f) {
    if (label_seen[f]) return;  // the first occurrence counts, as Descend finds
    label_seen[f] = 1;
    ReadLabelField(cur, w, row.record_label_fields[f].first, &labels[1 + f], &label_storage[f]);
  };
  const auto note_metric = [&](size_t mi) { found.push_back({mi, cur}); };
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!cur.ReadStr(&key).ok()) {
      if (!cur.Skip().ok() || !cur.Skip().ok()) return 0;
      continue;
    }
    // Positions past the first few (a record far wider than any connector's) are looked up
    // each time: what a hostile record made the buffer hold is not kept.
    KeyMeaning unremembered;
    if (i < KeyMeaning::kRememberedPositions && i >= meanings.size()) meanings.resize(i + 1);
    KeyMeaning& meaning = i < KeyMeaning::kRememberedPositions ? meanings[i] : unremembered;
    if (!meaning.known || meaning.key.size() != key.size() ||
        !SameBytes(meaning.key.data(), key.data(), key.size())) {
      meaning = WorkOutMeaning(key, w);
    }
    if (meaning.known) {
      if (meaning.label_field >= 0) read_label(static_cast<size_t>(meaning.label_field));
      for (uint8_t k = 0; k < meaning.metric_count; ++k) note_metric(meaning.metrics[k]);
    } else {
      ForEachMeaning(key, w, read_label, note_metric);
    }
    if (!cur.Skip().ok()) return 0;
  }
  r = cur;
  // Label fields with several segments are looked up from the record's start.
  for (size_t f = 0; w.nested_label_fields && f < row.record_label_fields.size(); ++f) {
    const std::string& field = row.record_label_fields[f].first;
    if (field.find('.') == std::string::npos) continue;
    MsgpackReader d = record;
    if (Descend(d, field)) ReadLabelField(d, w, field, &labels[1 + f], &label_storage[f]);
  }
  size_t produced = 0;
  for (size_t mi = 0; mi < row.metrics.size(); ++mi) {
    if (row.metrics[mi].sample_kind == SampleKind::kIncByOne) {
      static constexpr double kOne[] = {1.0};
      w.fn(ConnectorSample{mi, kOne, labels, w.label_set});
      ++produced;
    }
  }
  // `found` is this call's until here: ApplyMetric does not walk records.
  for (RecordScratch::Found& at : found) {
    produced += ApplyMetric(at.at, w, at.metric_index, labels);
  }
  return produced + ApplyNestedPaths(record, w, labels);
}

// Record-shaped payloads (Mooncake store): {operation: [record, ...]}.
size_t WalkRecords(const ConnectorPayload& p, Walk& w) {
  const ConnectorRow& row = w.row;
  size_t produced = 0;
  MsgpackReader r(p.payload, p.payload_offset);
  uint32_t n;
  if (!r.ReadMapHeader(&n).ok()) return 0;
  RecordScratch& scratch = w.buffers.records;
  scratch.meanings.clear();  // their keys point into another payload's bytes
  std::vector<std::string_view>& labels = scratch.labels;
  std::vector<std::string>& label_storage = scratch.label_storage;
  labels.assign(1 + row.record_label_fields.size(), std::string_view());
  label_storage.resize(row.record_label_fields.size());
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view op;
    if (!r.ReadStr(&op).ok()) {
      if (!r.Skip().ok() || !r.Skip().ok()) return produced;
      continue;
    }
    if (IsReserved(op)) {
      if (!r.Skip().ok()) return produced;
      continue;
    }
    uint32_t count;
    MsgpackReader list = r;
    if (!list.ReadArrayHeader(&count).ok()) {
      w.Report(static_cast<int64_t>(r.offset()), op,
               "expected a list of records; operation skipped", ProblemKind::kWrongType);
      if (!r.Skip().ok()) return produced;
      continue;
    }
    labels[0] = op;
    for (uint32_t j = 0; j < count; ++j) {
      MsgpackType t;
      if (!list.PeekType(&t).ok()) return produced;
      if (t != MsgpackType::kMap) {
        w.Report(static_cast<int64_t>(list.offset()), op, "expected a record map; record skipped",
                 ProblemKind::kWrongType);
        if (!list.Skip().ok()) return produced;
        continue;
      }
      const char* const before = list.position();
      ++w.label_set;  // each record's samples share their labels
      produced += WalkRecord(list, w, labels, label_storage, scratch);
      if (list.position() == before) return produced;  // a record that could not be read
    }
    r = list;  // after the operation's last record
  }
  return produced;
}

}  // namespace

size_t ForEachConnectorSample(const ConnectorPayload& payload, const ConnectorRow& row,
                              const DecodeContext& ctx, const ConnectorSampleFn& fn) {
  if (payload.malformed) return 0;
  BorrowedWalkBuffers buffers;
  const KeyIndex keys(row);
  Walk w{row, ctx, payload.connector, fn, buffers.get(), keys};
  for (const MetricDef& m : row.metrics) {
    w.nested_metric_paths = w.nested_metric_paths || m.samples_path.find('.') != std::string::npos;
  }
  for (const auto& [field, unused] : row.record_label_fields) {
    w.nested_label_fields = w.nested_label_fields || field.find('.') != std::string::npos;
  }
  if (row.record_shaped()) return WalkRecords(payload, w);
  return WalkMap(MsgpackReader(payload.payload, payload.payload_offset), w);
}

}  // namespace vmetrics
