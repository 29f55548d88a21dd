// SPDX-License-Identifier: Apache-2.0
// Throttled error messages of the HTTP server; see error_log.h.
#include "error_log.h"

namespace vmetrics::internal {

ErrorLog::ErrorLog(Sink sink, Clock::duration interval, std::function<Clock::time_point()> now)
    : sink_(std::move(sink)), interval_(interval), now_(std::move(now)) {}

std::string ErrorLog::CountLine(const Kind& kind) const {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(interval_).count();
  return kind.first + " (" + std::to_string(kind.more) + " more like this in the last " +
         std::to_string(seconds) + " s)";
}

void ErrorLog::Write(const std::vector<std::string>& lines) {
  if (!sink_) return;
  for (const std::string& line : lines) {
    try {
      sink_(line);
    } catch (...) {
      // A throwing sink must not take the server's thread down with it.
    }
  }
}

void ErrorLog::Log(std::string_view kind, std::string_view message) {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = now_();
    auto it = kinds_.find(kind);
    if (it == kinds_.end()) {
      it = kinds_.emplace(std::string(kind), Kind{}).first;
    } else if (interval_ > Clock::duration::zero() && now - it->second.opened < interval_) {
      ++it->second.more;
      return;
    } else if (it->second.more > 0) {
      lines.push_back(CountLine(it->second));
    }
    it->second.opened = now;
    it->second.first = std::string(message);
    it->second.more = 0;
    lines.emplace_back(message);
    lines_written_ += lines.size();
  }
  Write(lines);
}

void ErrorLog::Flush(bool all) {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = now_();
    for (auto it = kinds_.begin(); it != kinds_.end();) {
      Kind& kind = it->second;
      const bool over = now - kind.opened >= interval_;
      if (kind.more > 0 && (all || over)) {
        lines.push_back(CountLine(kind));
        kind.more = 0;
      }
      // A kind whose interval is over with nothing counted starts afresh with its next
      // message; forgetting it keeps the map as small as the kinds seen lately.
      if (over && kind.more == 0) {
        it = kinds_.erase(it);
      } else {
        ++it;
      }
    }
    lines_written_ += lines.size();
  }
  Write(lines);
}

uint64_t ErrorLog::lines_written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_written_;
}

}  // namespace vmetrics::internal
