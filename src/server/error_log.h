// SPDX-License-Identifier: Apache-2.0
// File: error_log.h (internal to src/server)
//
// ErrorLog: the HTTP server's error messages, each kind written once per interval with a count
// of the rest.
//
// Why: every bad request a client sends makes libmicrohttpd log a line ("Error processing
// request ...", "Connection was closed by remote side ..."), and a client can send thousands a
// second: 5,000 bad requests wrote 5,062 lines. A log a client can fill is a log nobody reads
// and a disk anybody can fill. So the first message of a kind is written at once; the others
// of the same kind within `interval` are only counted, and when the interval is over the count
// is written with the message that opened it:
//
//   Error processing request (HTTP response code is 400 ...). Closing connection.
//   Error processing request (HTTP response code is 400 ...). Closing connection. (4999 more
//   like this in the last 10 s)
//
// A kind is a short fixed string: libmicrohttpd's format string (so "response code is 400" and
// "is 431" are one kind, as they are one call site), or the server's own ("connection
// timeout"). Counts are written by Flush, which the server calls periodically and when it
// stops, so a burst followed by silence is still reported, at most one interval late.
//
// Thread safety: every method may be called from any thread. The sink is called without any
// lock held, so two lines may reach it in either order; it must be thread-safe.
#ifndef VMETRICS_SERVER_ERROR_LOG_H_
#define VMETRICS_SERVER_ERROR_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vmetrics::internal {

class ErrorLog {
 public:
  using Clock = std::chrono::steady_clock;
  using Sink = std::function<void(std::string_view)>;

  // `sink` receives each line (may be empty: nothing is written). `interval` 0 writes every
  // message. `now` tells the time (tests pass a fake clock).
  ErrorLog(
      Sink sink, Clock::duration interval,
      std::function<Clock::time_point()> now = [] { return Clock::now(); });
  ErrorLog(const ErrorLog&) = delete;
  ErrorLog& operator=(const ErrorLog&) = delete;

  // Log
  //
  // Writes `message` if it is the first of `kind` in the current interval (first writing the
  // count of the previous interval's others, if any), else counts it.
  //
  // Example:
  //   ErrorLog log(sink, std::chrono::seconds(10));
  //   log.Log("timeout", "connection 1 timed out");  // written
  //   log.Log("timeout", "connection 2 timed out");  // counted
  //   log.Flush(/*all=*/true);  // "connection 1 timed out (1 more like this in the last 10 s)"
  void Log(std::string_view kind, std::string_view message);

  // Flush
  //
  // Writes the count of every kind whose interval is over (every kind with a count, when
  // `all`) and starts its next interval afresh.
  void Flush(bool all);

  // Messages written to the sink so far, counts included; for tests.
  uint64_t lines_written() const;

 private:
  struct Kind {
    Clock::time_point opened;  // when the interval began (the first message written)
    std::string first;         // that message
    uint64_t more = 0;         // messages of this kind counted since
  };

  // The line that reports `kind`'s count.
  std::string CountLine(const Kind& kind) const;
  void Write(const std::vector<std::string>& lines);

  const Sink sink_;
  const Clock::duration interval_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_;  // guarded by mu_
  uint64_t lines_written_ = 0;                      // guarded by mu_
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_ERROR_LOG_H_
