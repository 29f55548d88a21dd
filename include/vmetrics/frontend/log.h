// SPDX-License-Identifier: Apache-2.0
// File: log.h
//
// Process logging of the frontend and the vmetrics binary: one line per event on stderr, as
// text ("2026-12-01T18:40:30.123Z vmetrics: engine 0 joined": UTC time to the millisecond) or
// JSON ({"ts":..., "level":"info", "msg":...}), chosen with SetLogFormat
// (FrontendOptions::log_format, --log-format). Debug lines, warnings and errors are marked in
// text ("... vmetrics: warning: ..."); info lines are not. Lines below the level set with
// SetLogLevel (--log-level; info by default) are not written.
//
// Bounded: a message is cut at kMaxLogMessageBytes (its tail replaced by how many bytes were
// left out), and at most kLogLinesPerSecond lines per second are written after a burst of
// kLogLineBurst; the lines past that are counted and the next line written says how many
// were left out. Engines and clients choose some of the text logged (connector names, request
// ids), so neither a long string nor many distinct ones can fill a disk.
//
// Thread-safe: lines from different threads never interleave.
//
// Example:
//   SetLogFormat(LogFormat::kJson);
//   LogWarning("engine 1 lost: input connection closed");
#ifndef VMETRICS_FRONTEND_LOG_H_
#define VMETRICS_FRONTEND_LOG_H_

#include <chrono>
#include <cstdint>
#include <string_view>

#include "vmetrics/frontend.h"

namespace vmetrics::frontend {

void SetLogFormat(LogFormat format);
// "text" or "json"; false for anything else.
bool ParseLogFormat(std::string_view name, LogFormat* format);

enum class LogLevel : uint8_t { kDebug, kInfo, kWarning, kError };
void SetLogLevel(LogLevel level);
// "debug", "info", "warning" or "error"; false for anything else.
bool ParseLogLevel(std::string_view name, LogLevel* level);

inline constexpr size_t kMaxLogMessageBytes = 1024;  // of the message, before escaping
inline constexpr double kLogLinesPerSecond = 20;
inline constexpr double kLogLineBurst = 200;

// LineBudget: a token bucket of log lines. Take(now) is true when a line may be written; the
// lines refused since the last true are counted and handed to the next true's caller.
// Thread safety: none; log.cc holds its lock around it.
class LineBudget {
 public:
  using Clock = std::chrono::steady_clock;
  LineBudget(double lines_per_second, double burst)
      : rate_(lines_per_second), burst_(burst), tokens_(burst) {}
  // True: write the line, and first one that says `*left_out` lines were left out (0: none).
  bool Take(Clock::time_point now, uint64_t* left_out);

 private:
  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point last_{};
  uint64_t refused_ = 0;
};

// Starts the line budget afresh with these figures (the defaults above are the process's
// until then). For tests, which log from many servers in one process.
void SetLogLineBudget(double lines_per_second, double burst);

void LogDebug(std::string_view message);
void LogInfo(std::string_view message);
void LogWarning(std::string_view message);
void LogError(std::string_view message);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_LOG_H_
