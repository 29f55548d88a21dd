// SPDX-License-Identifier: Apache-2.0
// File: bench/bench_util.h
//
// Small helpers the benchmark binaries share: the counters every throughput benchmark reports
// (messages/s, bytes/s, request outputs/s), so bench/compare can read them by name from
// Google Benchmark's JSON output.
#ifndef VMETRICS_BENCH_BENCH_UTIL_H_
#define VMETRICS_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include "bench/workloads.h"

namespace vmetrics::bench {

// Reports one pass over `w` per iteration as messages/s, bytes/s and outputs/s.
inline void SetThroughputCounters(benchmark::State& state, const Workload& w) {
  const double passes = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(passes * static_cast<double>(w.bytes)));
  state.SetItemsProcessed(static_cast<int64_t>(passes * static_cast<double>(w.messages.size())));
  state.counters["messages_per_s"] = benchmark::Counter(
      passes * static_cast<double>(w.messages.size()), benchmark::Counter::kIsRate);
  state.counters["outputs_per_s"] =
      benchmark::Counter(passes * static_cast<double>(w.outputs), benchmark::Counter::kIsRate);
}

}  // namespace vmetrics::bench

#endif  // VMETRICS_BENCH_BENCH_UTIL_H_
