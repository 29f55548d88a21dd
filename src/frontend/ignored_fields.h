// SPDX-License-Identifier: Apache-2.0
// File: ignored_fields.h
//
// IgnoredFields: what `serve` tells of request fields it ignored as vLLM's request models ignore
// them (vllm_request_fields.h): vmetrics_request_fields_ignored_total{field} counts them, and
// each field name is logged once, so a client that misspells a parameter can find out why it
// had no effect (vLLM logs the names at debug level on every request).
//
// Bounded, as field names come from clients: at most kMaxNames distinct names get a child and
// a log line; names past that, and names longer than kMaxNameBytes, are counted under
// field="other". Names are valid UTF-8 (they come from parsed JSON) and written escaped.
//
// Thread safety: Count may be called from any thread.
//
// Example:
//   IgnoredFields ignored(&registry, [](std::string_view line) { LogWarning(line); });
//   ignored.Count("best_of");  // vmetrics_request_fields_ignored_total{field="best_of"} 1.0
#ifndef VMETRICS_FRONTEND_IGNORED_FIELDS_H_
#define VMETRICS_FRONTEND_IGNORED_FIELDS_H_

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "vmetrics/registry.h"

namespace vmetrics::frontend {

class IgnoredFields {
 public:
  static constexpr size_t kMaxNames = 64;
  static constexpr size_t kMaxNameBytes = 64;

  IgnoredFields(Registry* registry, std::function<void(std::string_view)> log);

  // +1 on the field's child (or "other"); the first time a name has its own child, one line
  // through `log`.
  void Count(std::string_view field);

 private:
  CounterFamily family_;
  std::function<void(std::string_view)> log_;
  std::mutex mu_;
  std::map<std::string, Counter*, std::less<>> children_;  // guarded by mu_
  Counter* other_ = nullptr;
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_IGNORED_FIELDS_H_
