// File: log.h
//
// Process logging of the frontend and the vmetrics binary: one line per event on stderr, as
// text ("vmetrics: engine 0 joined") or JSON ({"ts":..., "level":"info", "msg":...}), chosen
// with SetLogFormat (FrontendOptions::log_format, --log-format). Warnings and errors are
// marked in text ("vmetrics: warning: ..."); info lines are not.
//
// Thread-safe: lines from different threads never interleave.
//
// Example:
//   SetLogFormat(LogFormat::kJson);
//   LogWarning("engine 1 lost: input connection closed");
#ifndef VMETRICS_FRONTEND_LOG_H_
#define VMETRICS_FRONTEND_LOG_H_

#include <string_view>

#include "vmetrics/frontend.h"

namespace vmetrics::frontend {

void SetLogFormat(LogFormat format);
// "text" or "json"; false for anything else.
bool ParseLogFormat(std::string_view name, LogFormat* format);

void LogInfo(std::string_view message);
void LogWarning(std::string_view message);
void LogError(std::string_view message);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_LOG_H_
