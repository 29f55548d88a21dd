// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/reporter.h"

#include <functional>

namespace vmetrics {

std::string FormatProblem(const Problem& p) {
  std::string s;
  if (p.message_number > 0) s += "message " + std::to_string(p.message_number);
  if (p.offset >= 0) {
    if (!s.empty()) s += ", ";
    s += "byte " + std::to_string(p.offset);
  }
  if (!s.empty()) s += ": ";
  if (!p.connector.empty()) {
    s += "connector ";
    s += p.connector;
    s += ", ";
  }
  if (!p.key.empty()) {
    s += "key '";
    s += p.key;
    s += "': ";
  }
  s += p.what;
  return s;
}

void LoggingReporter::Report(const Problem& problem) {
  if (problem.kind != ProblemKind::kOther && count_kind_) count_kind_(problem.kind);
  // A distinct problem is (connector, key, what); message numbers and offsets vary per message
  // and would defeat "logged once".
  std::string id;
  id.append(problem.connector)
      .append("\x1f")
      .append(problem.key)
      .append("\x1f")
      .append(problem.what);
  std::lock_guard<std::mutex> lock(mu_);
  ++count_;
  const uint64_t key = std::hash<std::string>{}(id);
  if (seen_.size() >= kMaxDistinct && !seen_.contains(key)) {
    if (!full_ && log_) {
      log_(std::to_string(kMaxDistinct) +
           " distinct problems logged; further new ones are counted, not logged");
    }
    full_ = true;
    return;
  }
  if (seen_.insert(key).second && log_) log_(FormatProblem(problem));
}

uint64_t LoggingReporter::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

}  // namespace vmetrics
