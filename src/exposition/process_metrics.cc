// SPDX-License-Identifier: Apache-2.0
// The process families; see include/vmetrics/process_metrics.h. The reading follows
// prometheus_client/process_collector.py (0.16): fields after the last ')' of stat, float() of
// each, the clock tick and page size of the system.
#include "vmetrics/process_metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace vmetrics {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) parts.emplace_back(s.substr(start, i - start));
  }
  return parts;
}

bool ToDouble(const std::string& s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

void WriteFamily(std::string_view name, std::string_view meta_name, std::string_view type,
                 std::string_view help, double value, std::string* out) {
  out->append("# HELP ").append(meta_name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(meta_name).append(" ").append(type).append("\n");
  out->append(name).append(" ");
  AppendGoFloat(value, out);
  out->append("\n");
}

}  // namespace

ProcessStats ReadProcessStats(std::string_view proc, std::string_view pid) {
  ProcessStats stats;
  const std::string root(proc);
  std::string text;
  double btime = 0;
  if (ReadFile(root + "/stat", &text)) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("btime ")) {
        const std::vector<std::string> parts = Split(line);
        if (parts.size() > 1 && ToDouble(parts[1], &btime)) stats.have_btime = btime != 0;
        break;
      }
    }
  }
  if (!stats.have_btime) return stats;
  const std::string dir = root + "/" + std::string(pid);
  long ticks_l = sysconf(_SC_CLK_TCK);
  const double ticks = ticks_l > 0 ? static_cast<double>(ticks_l) : 100.0;
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (ReadFile(dir + "/stat", &text)) {
    const size_t paren = text.rfind(')');
    const std::vector<std::string> parts =
        Split(paren == std::string::npos ? std::string_view(text)
                                         : std::string_view(text).substr(paren + 1));
    double utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
    if (parts.size() > 21 && ToDouble(parts[11], &utime) && ToDouble(parts[12], &stime) &&
        ToDouble(parts[19], &start) && ToDouble(parts[20], &vsize) && ToDouble(parts[21], &rss)) {
      ProcessStats::FromStat s;
      s.virtual_memory_bytes = vsize;
      s.resident_memory_bytes = rss * page;
      s.start_time_seconds = start / ticks + btime;
      s.cpu_seconds = utime / ticks + stime / ticks;
      stats.stat = s;
    }
  }
  if (ReadFile(dir + "/limits", &text)) {
    std::optional<double> max;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("Max open file")) {
        const std::vector<std::string> parts = Split(line);
        double v = 0;
        if (parts.size() > 3 && ToDouble(parts[3], &v)) max = v;
        break;
      }
    }
    DIR* d = opendir((dir + "/fd").c_str());
    if (max && d != nullptr) {
      double open = 0;
      while (dirent* entry = readdir(d)) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..") open += 1;
      }
      stats.fds = ProcessStats::Fds{open, *max};
    }
    if (d != nullptr) closedir(d);
  }
  return stats;
}

void WriteProcessMetrics(const ProcessStats& stats, ExpositionFormat format, std::string* out) {
  if (!stats.have_btime) return;
  if (stats.stat) {
    const ProcessStats::FromStat& s = *stats.stat;
    WriteFamily("process_virtual_memory_bytes", "process_virtual_memory_bytes", "gauge",
                "Virtual memory size in bytes.", s.virtual_memory_bytes, out);
    WriteFamily("process_resident_memory_bytes", "process_resident_memory_bytes", "gauge",
                "Resident memory size in bytes.", s.resident_memory_bytes, out);
    WriteFamily("process_start_time_seconds", "process_start_time_seconds", "gauge",
                "Start time of the process since unix epoch in seconds.", s.start_time_seconds,
                out);
    // Text 0.0.4 names a counter's metadata with _total, OpenMetrics without.
    WriteFamily("process_cpu_seconds_total",
                format == ExpositionFormat::kOpenMetrics ? "process_cpu_seconds"
                                                         : "process_cpu_seconds_total",
                "counter", "Total user and system CPU time spent in seconds.", s.cpu_seconds, out);
  }
  if (stats.fds) {
    WriteFamily("process_open_fds", "process_open_fds", "gauge", "Number of open file descriptors.",
                stats.fds->open, out);
    WriteFamily("process_max_fds", "process_max_fds", "gauge",
                "Maximum number of open file descriptors.", stats.fds->max, out);
  }
}

}  // namespace vmetrics
