// Process logging to stderr; see log.h.
#include "vmetrics/frontend/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

#include "vmetrics/internal/wire_text.h"

namespace vmetrics::frontend {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::mutex g_mu;

void Write(const char* level, std::string_view raw) {
  // Messages quote strings from the wire: control characters would forge lines or drive a
  // terminal, and invalid UTF-8 would make the JSON writer throw (wire_text.h).
  const std::string message = internal::EscapeForLog(raw);
  std::string line;
  if (g_format.load() == LogFormat::kJson) {
    const double ts = std::chrono::duration<double>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    nlohmann::ordered_json j;
    j["ts"] = ts;
    j["level"] = level;
    j["msg"] = message;
    line = j.dump();
  } else {
    line = "vmetrics: ";
    if (std::string_view(level) != "info") line.append(level).append(": ");
    line.append(message);
  }
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

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

void LogInfo(std::string_view message) { Write("info", message); }
void LogWarning(std::string_view message) { Write("warning", message); }
void LogError(std::string_view message) { Write("error", message); }

}  // namespace vmetrics::frontend
