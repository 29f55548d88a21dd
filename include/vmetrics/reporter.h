// SPDX-License-Identifier: Apache-2.0
// File: reporter.h
//
// Reporter: where decoders and recorders send problems that do not stop a message (a stats
// field of the wrong type, an unknown connector, a payload that is not a map). The message
// carries on; the reporter decides how to log and count. LoggingReporter logs each distinct
// problem once (keyed by connector, key and what went wrong) and counts every occurrence.
//
// Thread safety: LoggingReporter::Report may be called from any thread.
#ifndef VMETRICS_REPORTER_H_
#define VMETRICS_REPORTER_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace vmetrics {

// What kind of value a problem skipped, for vmetrics_wire_values_skipped_total{reason}: a
// reporter counts by kind, never by parsing `what`. kOther problems (a whole payload or
// message refused, an unknown connector) are counted by their own families instead.
enum class ProblemKind : uint8_t {
  kOther,
  kWrongType,            // a field of the wrong msgpack type
  kNegativeIncrement,    // a counter increment below 0
  kNanIncrement,         // a counter increment that is NaN
  kIntegerOverflow,      // an integer above 2^63-1 (or out of the field's range)
  kInvalidUtf8,          // a str that is not valid UTF-8, where it would become a label value
  kLabelValueTooLong,    // a label value longer than --max-label-value-bytes
  kLabelValuesLimit,     // a new label value past --max-label-values-per-family
  kNanObservation,       // a histogram observation that is NaN (it would make _sum NaN for good)
  kInfiniteObservation,  // a histogram observation that is +Inf or -Inf
};

// The `reason` label of each kind but kOther, in ProblemKind order (kWireSkipReasons[k - 1]).
inline constexpr std::string_view kWireSkipReasons[] = {
    "wrong_type",         "negative_increment", "nan_increment",
    "integer_overflow",   "invalid_utf8",       "label_value_too_long",
    "label_values_limit", "nan_observation",    "infinite_observation"};

// ObservationProblem
//
// What is wrong with a histogram observation from the wire (a duration, a latency computed
// from engine timestamps, a count), or kOther when it can be observed: any finite value. NaN
// would make the child's `_sum` NaN for good; an infinite value (from an infinite timestamp)
// makes it infinite, and NaN once the other infinity follows. OpenMetrics parsers refuse a NaN
// `_sum` ("Counter-like samples cannot be NaN": the whole scrape is lost). A finite negative
// value (timestamps that run backwards) is observed, as vLLM's frontend observes it: real
// engines produce them (docs/recording.md). One comparison on the hot path.
//
// Example:
//   if (ObservationProblem(v) == ProblemKind::kOther) histogram->Observe(v);
inline ProblemKind ObservationProblem(double v) {
  if (std::isfinite(v)) return ProblemKind::kOther;
  return v != v ? ProblemKind::kNanObservation : ProblemKind::kInfiniteObservation;
}

struct Problem {
  ProblemKind kind = ProblemKind::kOther;
  uint64_t message_number = 0;  // 1-based position in the stream (0 = unknown)
  int64_t offset = -1;          // byte offset in frame 0, -1 = unknown
  std::string_view connector;   // connector class name, "" outside kv_connector_stats
  std::string_view key;         // the offending key or field ("" = the whole value)
  std::string what;             // what was wrong, e.g. "expected list of numbers, got str"
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void Report(const Problem& problem) = 0;
};

// Logs the first occurrence of each distinct (connector, key, what) through `log`, then stays
// quiet about it; counts all occurrences. It remembers at most kMaxDistinct problems, so a
// stream of ever-different bad input cannot grow it without bound: past that, one line says
// so and further new problems are counted, not logged. A problem is remembered by a 64-bit
// hash of what identifies it, so its size does not depend on the strings an engine sent (a
// 100 kB connector name costs 8 bytes; the log line quoting it is cut, see log.h).
class LoggingReporter : public Reporter {
 public:
  static constexpr size_t kMaxDistinct = 1000;

  // `count_kind` (may be empty) is called for every problem whose kind is not kOther, logged
  // or not: the recorder counts them in vmetrics_wire_values_skipped_total{reason}.
  explicit LoggingReporter(std::function<void(const std::string&)> log,
                           std::function<void(ProblemKind)> count_kind = nullptr)
      : log_(std::move(log)), count_kind_(std::move(count_kind)) {}
  void Report(const Problem& problem) override;
  uint64_t count() const;

 private:
  std::function<void(const std::string&)> log_;
  std::function<void(ProblemKind)> count_kind_;
  mutable std::mutex mu_;
  std::unordered_set<uint64_t> seen_;
  bool full_ = false;  // kMaxDistinct reached and said so
  uint64_t count_ = 0;
};

// Formats "message 3, byte 120: connector NixlConnector, key 'post_duration': <what>".
std::string FormatProblem(const Problem& problem);

}  // namespace vmetrics

#endif  // VMETRICS_REPORTER_H_
