// SPDX-License-Identifier: Apache-2.0
// File: process_metrics.h
//
// The process families prometheus_client's ProcessCollector exports, which vLLM's Python
// frontend shows on /metrics (its default registry keeps the collector; see docs/metrics.md):
//
//   process_virtual_memory_bytes    gauge    /proc/<pid>/stat vsize
//   process_resident_memory_bytes   gauge    rss (pages) x the page size
//   process_start_time_seconds      gauge    starttime / clock ticks + /proc/stat btime
//   process_cpu_seconds_total       counter  (utime + stime) / clock ticks
//   process_open_fds                gauge    entries of /proc/<pid>/fd
//   process_max_fds                 gauge    the soft "Max open files" of /proc/<pid>/limits
//
// Read at each scrape (ReadProcessStats) and written before the registry's families, as
// prometheus_client's default registry renders them before vLLM's: names, HELP, order, values
// and float formatting byte for byte as prometheus_client 0.16's (no `_created` sample: its
// CounterMetricFamily has none; OpenMetrics names the counter family process_cpu_seconds).
// What cannot be read is left out as prometheus_client leaves it out: all six without
// /proc/stat's btime, the first four without <pid>/stat, the last two without <pid>/limits
// or <pid>/fd.
//
// Thread safety: both functions are reentrant.
//
// Example:
//   std::string out;
//   WriteProcessMetrics(ReadProcessStats(), ExpositionFormat::kText, &out);
//   // out starts "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
#ifndef VMETRICS_PROCESS_METRICS_H_
#define VMETRICS_PROCESS_METRICS_H_

#include <optional>
#include <string>
#include <string_view>

#include "vmetrics/exposition.h"

namespace vmetrics {

struct ProcessStats {
  struct FromStat {
    double virtual_memory_bytes = 0;
    double resident_memory_bytes = 0;
    double start_time_seconds = 0;
    double cpu_seconds = 0;
  };
  struct Fds {
    double open = 0;
    double max = 0;
  };
  bool have_btime = false;  // without it nothing is written
  std::optional<FromStat> stat;
  std::optional<Fds> fds;
};

// `proc`: the proc file system's root; `pid`: the directory under it ("self", "1234").
ProcessStats ReadProcessStats(std::string_view proc = "/proc", std::string_view pid = "self");

// Appends the families `stats` has, in prometheus_client's order.
void WriteProcessMetrics(const ProcessStats& stats, ExpositionFormat format, std::string* out);

}  // namespace vmetrics

#endif  // VMETRICS_PROCESS_METRICS_H_
