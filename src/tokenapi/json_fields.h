// SPDX-License-Identifier: Apache-2.0
// File: json_fields.h
//
// JsonFields: reads the fields of one JSON object of a request body, each with its type
// checked and a 400 naming it otherwise, and remembers which it read, so that the fields nobody
// read can be sorted (SortUnread): refused by name where vLLM's request model declares them
// (vLLM would honour them), ignored otherwise (vLLM's models ignore what they do not declare).
// Absent and null fields leave the output as it was (the caller's default), except where
// noted.
//
// Types are read strictly, as msgspec reads a SamplingParams: an integer field takes a JSON
// integer (not 5.0, not "5"); a number field takes an integer or a float; a boolean field only
// true or false. An integer above 2^63 - 1 is refused ("... is too large"), as Python's encoder
// refuses it with an OverflowError.
//
// Thread safety: one reader per thread; the object must outlive it.
//
// Example:
//   nlohmann::ordered_json doc = nlohmann::ordered_json::parse(R"({"n":2,"x":1})");
//   JsonFields f(doc, "");
//   int64_t n = 1;
//   EXPECT_FALSE(f.Int("n", &n));
//   EXPECT_EQ(f.Unread(), std::vector<std::string>{"x"});
#ifndef VMETRICS_FRONTEND_JSON_FIELDS_H_
#define VMETRICS_FRONTEND_JSON_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_error.h"

namespace vmetrics::frontend {

using Json = nlohmann::ordered_json;
using MaybeError = std::optional<ApiError>;

// The deepest nesting of arrays and objects a JSON field that goes to an engine may have, the
// field's own object counted ({} is 1, {"a":[1]} is 2): kv_transfer_params,
// ec_transfer_params, vllm_xargs, generate's sampling_params.extra_args. An engine decodes
// these with msgspec, which recurses once per level under Python's recursion limit (1000 by
// default; CPython 3.11's json.loads refuses about 1,000 levels of a bare array); 64 leaves
// room for the frames below it, is what MsgpackToJson renders back without "<too deep>", and
// is far above what a transfer connector sends (two or three levels).
inline constexpr size_t kMaxJsonNestingDepth = 64;

// Whether `v` (nlohmann::json or ordered_json) nests arrays and objects more than `limit` deep.
// Depth-first with an explicit stack of (container, its depth): a body of a few hundred
// kilobytes can nest tens of thousands of levels, more than the thread's stack holds frames.
template <typename J>
bool JsonNestedDeeperThan(const J& v, size_t limit) {
  if (!v.is_structured()) return false;
  std::vector<std::pair<const J*, size_t>> stack{{&v, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (depth > limit) return true;
    for (const J& child : *node) {
      if (child.is_structured()) stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

class JsonFields {
 public:
  // `prefix` goes before every field name in messages and `param` ("sampling_params.").
  JsonFields(const Json& object, std::string prefix);

  // The field's value, marked read; nullptr when absent. Null is returned (it is a value).
  const Json* Get(std::string_view key);
  // Present and not null (marks it read).
  bool Has(std::string_view key);
  // The name a message uses: prefix + key.
  std::string Name(std::string_view key) const { return prefix_ + std::string(key); }

  MaybeError Int(std::string_view key, int64_t* out);
  MaybeError OptInt(std::string_view key, std::optional<int64_t>* out);  // null -> nullopt
  MaybeError Double(std::string_view key, double* out);
  MaybeError Bool(std::string_view key, bool* out);
  MaybeError OptBool(std::string_view key, std::optional<bool>* out);  // null -> nullopt
  MaybeError Str(std::string_view key, std::string* out);
  MaybeError OptStr(std::string_view key, std::optional<std::string>* out);  // null -> nullopt
  // A list of integers; `min`..`max` per element. null -> nullopt.
  MaybeError OptIntList(std::string_view key, std::optional<std::vector<int64_t>>* out,
                        int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  // An object (null -> nullptr, absent -> nullptr), nested at most kMaxJsonNestingDepth deep
  // (deeper: a 400 naming the field).
  MaybeError OptObject(std::string_view key, const Json** out);

  // The names (prefix + key) of the fields nobody read, in the object's order.
  std::vector<std::string> Unread() const;

  // Sorts the fields nobody read: the first one `declared` names (a field of vLLM's model for
  // this object, which vLLM would honour and vmetrics did not read) is refused by name; the
  // others are appended to `ignored` (may be null), as vLLM's models ignore fields they do not
  // declare.
  MaybeError SortUnread(std::span<const std::string_view> declared,
                        std::vector<std::string>* ignored) const;

  // A 400 about `key`.
  ApiError Refuse(std::string_view key, const std::string& message) const {
    return BadRequest(message, Name(key));
  }

 private:
  const Json& object_;
  std::string prefix_;
  std::set<std::string, std::less<>> read_;
};

// A JSON integer as int64: nullopt when it is not an integer or does not fit.
std::optional<int64_t> JsonInt(const Json& v);

// JSON text of a value for a response: invalid UTF-8 in strings is replaced, never thrown.
std::string DumpJson(const Json& v);

// The text DumpJson gives, appended to `out` without building a tree: a stream writes one
// chunk per engine step per choice, and building, dumping and freeing a tree for each was a
// sixth of `serve`'s CPU per streamed request (bench/README.md, "Token APIs against their
// floor"). A string of printable ASCII without `"` or `\` is copied; any other goes through
// DumpJson, so escaping and the replacement of invalid UTF-8 stay nlohmann's.
void AppendJsonString(std::string_view s, std::string* out);
void AppendJsonStringOrNull(std::string_view s, std::string* out);  // "" as null
void AppendJsonInt(int64_t v, std::string* out);
void AppendJsonInts(std::span<const int64_t> values, std::string* out);
void AppendJson(const Json& v, std::string* out);  // null as "null" without DumpJson

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_JSON_FIELDS_H_
