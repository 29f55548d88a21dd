// SPDX-License-Identifier: Apache-2.0
// floor_bench: the floor of decoding, protocol::ValidateOne over the W1 and W2 captures. It
// reads every header and checks every length against the input and builds nothing, so no
// decoder that validates its input can be faster; decode+record is reported against it.
// Baseline in the same file: summing every byte (the memory-read ceiling, no parsing).
//
// Run:
//   cmake --build build-bench --target floor_bench && build-bench/bench/floor_bench
//
// Recorded result (2-core Intel Xeon (family 6 model 207) KVM guest, g++ 12.2 -O3, 2026-11-30; CPU
// time, best of 5; per message; see bench/README.md):
//   BM_Floor/w1      0.94 us   3.76 GB/s
//   BM_Floor/w2      6.86 us   2.50 GB/s
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"
#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics::bench {
namespace {

const Workload& Get(const std::string& name) {
  static const Workload w1 = LoadOrMake("w1");
  static const Workload w2 = LoadOrMake("w2");
  return name == "w1" ? w1 : w2;
}

void BM_Floor(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  for (auto _ : state) {
    for (const std::string& m : w.messages) {
      size_t n = 0;
      Status s = protocol::ValidateOne(m, &n);
      benchmark::DoNotOptimize(s);
      benchmark::DoNotOptimize(n);
    }
  }
  SetThroughputCounters(state, w);
}

void BM_SumBytes(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  for (auto _ : state) {
    for (const std::string& m : w.messages) {
      uint64_t sum = 0;
      for (char c : m) sum += static_cast<uint8_t>(c);
      benchmark::DoNotOptimize(sum);
    }
  }
  SetThroughputCounters(state, w);
}

BENCHMARK_CAPTURE(BM_Floor, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_Floor, w2, std::string("w2"));
BENCHMARK_CAPTURE(BM_SumBytes, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_SumBytes, w2, std::string("w2"));

}  // namespace
}  // namespace vmetrics::bench

BENCHMARK_MAIN();
