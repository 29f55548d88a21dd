// SPDX-License-Identifier: Apache-2.0
#include "requests_sidecar.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace vmetrics::frontend {
namespace {

using nlohmann::json;

Status LineError(size_t number, const std::string& what) {
  return Status::Malformed("requests sidecar line " + std::to_string(number) + ": " + what);
}

// A number field; `required` decides whether absence is an error.
bool NumberField(const json& doc, const char* key, double* out, bool required, std::string* err) {
  auto it = doc.find(key);
  if (it == doc.end()) {
    if (required) *err = std::string("missing \"") + key + "\"";
    return !required;
  }
  if (!it->is_number()) {
    *err = std::string("\"") + key + "\" must be a number";
    return false;
  }
  *out = it->get<double>();
  return true;
}

bool IntField(const json& doc, const char* key, int64_t* out, bool required, std::string* err) {
  auto it = doc.find(key);
  if (it == doc.end()) {
    if (required) *err = std::string("missing \"") + key + "\"";
    return !required;
  }
  if (!it->is_number_integer()) {
    *err = std::string("\"") + key + "\" must be an integer";
    return false;
  }
  *out = it->get<int64_t>();
  return true;
}

bool StringField(const json& doc, const char* key, std::string* out, std::string* err) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (!it->is_string()) {
    *err = std::string("\"") + key + "\" must be a string";
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

}  // namespace

Result<RequestSidecar> RequestSidecar::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot open requests sidecar " + path);
  RequestSidecar sidecar;
  std::string text;
  uint64_t last_message = 0;
  for (size_t number = 1; std::getline(in, text); ++number) {
    if (text.empty() || text[0] == '#') continue;
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return LineError(number, "not a JSON object");
    Line line;
    std::string err;
    if (doc.contains("message")) {
      line.kind = Line::Kind::kMessage;
      int64_t message = 0;
      if (!IntField(doc, "message", &message, true, &err) ||
          !NumberField(doc, "iteration_timestamp", &line.iteration_timestamp, true, &err)) {
        return LineError(number, err);
      }
      if (message <= 0 || static_cast<uint64_t>(message) <= last_message) {
        return LineError(number, "message numbers start at 1 and increase");
      }
      line.message = last_message = static_cast<uint64_t>(message);
      line.has_monotonic = doc.contains("monotonic");
      if (!NumberField(doc, "monotonic", &line.monotonic, false, &err)) {
        return LineError(number, err);
      }
    } else if (doc.contains("abort")) {
      line.kind = Line::Kind::kAbort;
      const json& ids = doc["abort"];
      if (!ids.is_array()) return LineError(number, "\"abort\" must be a list of request ids");
      for (const json& id : ids) {
        if (!id.is_string()) return LineError(number, "\"abort\" must be a list of request ids");
        line.abort.push_back(id.get<std::string>());
      }
    } else if (doc.contains("request_id")) {
      line.kind = Line::Kind::kAdd;
      RequestInfo& info = line.add;
      int64_t max_tokens = 16;
      if (!StringField(doc, "request_id", &info.request_id, &err) ||
          !NumberField(doc, "arrival_time", &info.arrival_time, true, &err) ||
          !IntField(doc, "prompt_len", &info.prompt_len, true, &err) ||
          !IntField(doc, "n", &info.n, false, &err) ||
          !StringField(doc, "parent", &info.parent_id, &err) ||
          !StringField(doc, "lora", &info.lora_name, &err)) {
        return LineError(number, err);
      }
      auto mt = doc.find("max_tokens");
      if (mt != doc.end() && mt->is_null()) {
        info.max_tokens = std::nullopt;
      } else {
        if (!IntField(doc, "max_tokens", &max_tokens, false, &err)) return LineError(number, err);
        info.max_tokens = max_tokens;
      }
      if (info.request_id.empty()) return LineError(number, "empty \"request_id\"");
    } else {
      return LineError(number, "expected a request, {\"abort\": [...]} or {\"message\": N, ...}");
    }
    sidecar.lines_.push_back(std::move(line));
  }
  return sidecar;
}

void RequestSidecar::Apply(const Line& line, RequestTracker* tracker) {
  switch (line.kind) {
    case Line::Kind::kAdd:
      tracker->AddRequest(line.add);
      break;
    case Line::Kind::kAbort:
      for (const std::string& id : line.abort) tracker->AbortRequest(id);
      break;
    case Line::Kind::kMessage:
      clocks_.iteration_timestamp = line.iteration_timestamp;
      if (line.has_monotonic) clocks_.monotonic = line.monotonic;
      break;
  }
}

RequestSidecar::Clocks RequestSidecar::Advance(uint64_t message_number, RequestTracker* tracker) {
  while (next_ < lines_.size()) {
    const Line& line = lines_[next_];
    if (line.kind == Line::Kind::kMessage && line.message > message_number) break;
    Apply(line, tracker);
    ++next_;
    if (line.kind == Line::Kind::kMessage && line.message == message_number) break;
  }
  return clocks_;
}

void RequestSidecar::Finish(RequestTracker* tracker) {
  while (next_ < lines_.size()) Apply(lines_[next_++], tracker);
}

}  // namespace vmetrics::frontend
