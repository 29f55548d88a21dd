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

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace vmetrics {

struct Problem {
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
// so and further new problems are counted, not logged.
class LoggingReporter : public Reporter {
 public:
  static constexpr size_t kMaxDistinct = 1000;

  explicit LoggingReporter(std::function<void(const std::string&)> log) : log_(std::move(log)) {}
  void Report(const Problem& problem) override;
  uint64_t count() const;

 private:
  std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::set<std::string> seen_;
  bool full_ = false;  // kMaxDistinct reached and said so
  uint64_t count_ = 0;
};

// Formats "message 3, byte 120: connector NixlConnector, key 'post_duration': <what>".
std::string FormatProblem(const Problem& problem);

}  // namespace vmetrics

#endif  // VMETRICS_REPORTER_H_
