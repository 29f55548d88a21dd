// SPDX-License-Identifier: Apache-2.0
// Strict readers of a request's JSON fields; see json_fields.h.
#include "json_fields.h"

#include <algorithm>
#include <charconv>

namespace vmetrics::frontend {

JsonFields::JsonFields(const Json& object, std::string prefix)
    : object_(object), prefix_(std::move(prefix)) {}

const Json* JsonFields::Get(std::string_view key) {
  auto it = object_.find(std::string(key));
  if (it == object_.end()) return nullptr;
  read_.emplace(key);
  return &*it;
}

bool JsonFields::Has(std::string_view key) {
  const Json* v = Get(key);
  return v != nullptr && !v->is_null();
}

std::optional<int64_t> JsonInt(const Json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
  return v.get<int64_t>();
}

MaybeError JsonFields::Int(std::string_view key, int64_t* out) {
  const Json* v = Get(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_number_integer()) return Refuse(key, Name(key) + " must be an integer");
  std::optional<int64_t> i = JsonInt(*v);
  if (!i) return Refuse(key, Name(key) + " is too large");
  *out = *i;
  return std::nullopt;
}

MaybeError JsonFields::OptInt(std::string_view key, std::optional<int64_t>* out) {
  const Json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_null()) {
    out->reset();
    return std::nullopt;
  }
  int64_t i = 0;
  if (MaybeError e = Int(key, &i)) return e;
  *out = i;
  return std::nullopt;
}

MaybeError JsonFields::Double(std::string_view key, double* out) {
  const Json* v = Get(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_number()) return Refuse(key, Name(key) + " must be a number");
  *out = v->get<double>();
  return std::nullopt;
}

MaybeError JsonFields::Bool(std::string_view key, bool* out) {
  const Json* v = Get(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_boolean()) return Refuse(key, Name(key) + " must be a boolean");
  *out = v->get<bool>();
  return std::nullopt;
}

MaybeError JsonFields::OptBool(std::string_view key, std::optional<bool>* out) {
  const Json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_null()) {
    out->reset();
    return std::nullopt;
  }
  bool b = false;
  if (MaybeError e = Bool(key, &b)) return e;
  *out = b;
  return std::nullopt;
}

MaybeError JsonFields::Str(std::string_view key, std::string* out) {
  const Json* v = Get(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string()) return Refuse(key, Name(key) + " must be a string");
  *out = v->get<std::string>();
  return std::nullopt;
}

MaybeError JsonFields::OptStr(std::string_view key, std::optional<std::string>* out) {
  const Json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_null()) {
    out->reset();
    return std::nullopt;
  }
  if (!v->is_string()) return Refuse(key, Name(key) + " must be a string");
  *out = v->get<std::string>();
  return std::nullopt;
}

MaybeError JsonFields::OptIntList(std::string_view key, std::optional<std::vector<int64_t>>* out,
                                  int64_t min, int64_t max) {
  const Json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_null()) {
    out->reset();
    return std::nullopt;
  }
  if (!v->is_array()) return Refuse(key, Name(key) + " must be a list of integers");
  std::vector<int64_t> list;
  list.reserve(v->size());
  for (const Json& e : *v) {
    std::optional<int64_t> i = JsonInt(e);
    if (!i) return Refuse(key, Name(key) + " must be a list of integers");
    if (*i < min || *i > max) {
      return Refuse(key, Name(key) + " values must be between " + std::to_string(min) + " and " +
                             std::to_string(max));
    }
    list.push_back(*i);
  }
  *out = std::move(list);
  return std::nullopt;
}

MaybeError JsonFields::OptObject(std::string_view key, const Json** out) {
  const Json* v = Get(key);
  *out = nullptr;
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_object()) return Refuse(key, Name(key) + " must be an object");
  if (JsonNestedDeeperThan(*v, kMaxJsonNestingDepth)) {
    return Refuse(key, Name(key) + " is nested more than " + std::to_string(kMaxJsonNestingDepth) +
                           " levels deep");
  }
  *out = v;
  return std::nullopt;
}

std::vector<std::string> JsonFields::Unread() const {
  std::vector<std::string> names;
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_.contains(it.key())) names.push_back(Name(it.key()));
  }
  return names;
}

MaybeError JsonFields::SortUnread(std::span<const std::string_view> declared,
                                  std::vector<std::string>* ignored) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& key = it.key();
    if (read_.contains(key)) continue;
    if (std::find(declared.begin(), declared.end(), key) != declared.end()) {
      return BadRequest("`" + Name(key) +
                            "` is not supported by vmetrics: vLLM would honour it, and vmetrics "
                            "does not ignore what vLLM honours.",
                        Name(key));
    }
    if (ignored != nullptr) ignored->push_back(Name(key));
  }
  return std::nullopt;
}

std::string DumpJson(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void AppendJsonString(std::string_view s, std::string* out) {
  const bool plain = std::all_of(
      s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    out->append(DumpJson(Json(s)));
    return;
  }
  out->push_back('"');
  out->append(s);
  out->push_back('"');
}

void AppendJsonStringOrNull(std::string_view s, std::string* out) {
  if (s.empty()) {
    out->append("null");
  } else {
    AppendJsonString(s, out);
  }
}

void AppendJsonInt(int64_t v, std::string* out) {
  char digits[20];
  const std::to_chars_result end = std::to_chars(std::begin(digits), std::end(digits), v);
  out->append(digits, end.ptr);
}

void AppendJsonInts(std::span<const int64_t> values, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out->push_back(',');
    AppendJsonInt(values[i], out);
  }
  out->push_back(']');
}

void AppendJson(const Json& v, std::string* out) {
  if (v.is_null()) {
    out->append("null");
    return;
  }
  out->append(DumpJson(v));
}

}  // namespace vmetrics::frontend
