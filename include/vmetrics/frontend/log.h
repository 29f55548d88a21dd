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
// Thread-safe: lines from different threads never interleave.
//
// Example:
//   SetLogFormat(LogFormat::kJson);
//   LogWarning("engine 1 lost: input connection closed");
#ifndef VMETRICS_FRONTEND_LOG_H_
#define VMETRICS_FRONTEND_LOG_H_

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

void LogDebug(std::string_view message);
void LogInfo(std::string_view message);
void LogWarning(std::string_view message);
void LogError(std::string_view message);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_LOG_H_
