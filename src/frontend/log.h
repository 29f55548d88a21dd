// File: log.h
//
// Process logging for the vmetrics binary: one line per event on stderr, as text
// ("vmetrics: engine 0 connected") or JSON ({"ts":..., "level":"info", "msg":...}), chosen
// with --log-format. Thread-safe.
#ifndef VMETRICS_CLI_LOG_H_
#define VMETRICS_CLI_LOG_H_

#include <string>
#include <string_view>

namespace vmetrics::cli {

enum class LogFormat { kText, kJson };
void SetLogFormat(LogFormat format);
bool ParseLogFormat(std::string_view name, LogFormat* format);

void LogInfo(std::string_view message);
void LogWarning(std::string_view message);
void LogError(std::string_view message);

}  // namespace vmetrics::cli

#endif  // VMETRICS_CLI_LOG_H_
