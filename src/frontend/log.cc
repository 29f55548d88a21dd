// SPDX-License-Identifier: Apache-2.0
// Process logging to stderr; see log.h.
#include "vmetrics/frontend/log.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "vmetrics/internal/wire_text.h"

namespace vmetrics::frontend {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::mutex g_mu;
LineBudget g_budget(kLogLinesPerSecond, kLogLineBurst);  // guarded by g_mu

// "2026-12-01T18:40:30.123Z": UTC, milliseconds.
void AppendTimestamp(std::chrono::system_clock::time_point now, std::string* out) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const time_t secs = static_cast<time_t>(ms.count() / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  const int n = std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                              tm.tm_sec, static_cast<int>(ms.count() % 1000));
  out->append(buf, static_cast<size_t>(n));
}

// `raw` cut to kMaxLogMessageBytes, not inside a UTF-8 sequence, and escaped.
std::string BoundedMessage(std::string_view raw) {
  if (raw.size() <= kMaxLogMessageBytes) return internal::EscapeForLog(raw);
  size_t cut = kMaxLogMessageBytes;
  // Back to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx), at most 3 bytes.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(raw[cut]) & 0xC0) == 0x80; ++i) {
    --cut;
  }
  return internal::EscapeForLog(raw.substr(0, cut)) + "... (" + std::to_string(raw.size() - cut) +
         " more bytes)";
}

std::string FormatLine(std::chrono::system_clock::time_point now, const char* level,
                       const std::string& message) {
  std::string line;
  if (g_format.load() == LogFormat::kJson) {
    const double ts = std::chrono::duration<double>(now.time_since_epoch()).count();
    nlohmann::ordered_json j;
    j["ts"] = ts;
    j["level"] = level;
    j["msg"] = message;
    line = j.dump();
  } else {
    AppendTimestamp(now, &line);
    line += " vmetrics: ";
    if (std::string_view(level) != "info") line.append(level).append(": ");
    line.append(message);
  }
  line.push_back('\n');
  return line;
}

void Write(LogLevel level_value, const char* level, std::string_view raw) {
  if (level_value < g_level.load(std::memory_order_relaxed)) return;
  // The budget first: a line past it costs no formatting.
  uint64_t left_out = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_budget.Take(LineBudget::Clock::now(), &left_out)) return;
  }
  const auto now = std::chrono::system_clock::now();
  std::string out;
  if (left_out > 0) {
    out = FormatLine(now, "warning",
                     std::to_string(left_out) + " log lines were left out (more than " +
                         std::to_string(static_cast<int>(kLogLinesPerSecond)) + " per second)");
  }
  // Messages quote strings from the wire: control characters would forge lines or drive a
  // terminal, and invalid UTF-8 would make the JSON writer throw (wire_text.h).
  out += FormatLine(now, level, BoundedMessage(raw));
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

bool LineBudget::Take(Clock::time_point now, uint64_t* left_out) {
  if (last_ != Clock::time_point{}) {
    tokens_ =
        std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
  }
  last_ = now;
  if (tokens_ < 1) {
    ++refused_;
    return false;
  }
  tokens_ -= 1;
  *left_out = refused_;
  refused_ = 0;
  return true;
}

void SetLogLineBudget(double lines_per_second, double burst) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_budget = LineBudget(lines_per_second, burst);
}

void SetLogFormat(LogFormat format) { g_format.store(format); }

bool ParseLogFormat(std::string_view name, LogFormat* format) {
  if (name == "text") {
    *format = LogFormat::kText;
  } else if (name == "json") {
    *format = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

void SetLogLevel(LogLevel level) { g_level.store(level); }

bool ParseLogLevel(std::string_view name, LogLevel* level) {
  if (name == "debug") {
    *level = LogLevel::kDebug;
  } else if (name == "info") {
    *level = LogLevel::kInfo;
  } else if (name == "warning") {
    *level = LogLevel::kWarning;
  } else if (name == "error") {
    *level = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

void LogDebug(std::string_view message) { Write(LogLevel::kDebug, "debug", message); }
void LogInfo(std::string_view message) { Write(LogLevel::kInfo, "info", message); }
void LogWarning(std::string_view message) { Write(LogLevel::kWarning, "warning", message); }
void LogError(std::string_view message) { Write(LogLevel::kError, "error", message); }

}  // namespace vmetrics::frontend
