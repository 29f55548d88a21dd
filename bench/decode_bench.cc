// SPDX-License-Identifier: Apache-2.0
// decode_bench: DecodeEngineCoreOutputs over the W1 (stats-heavy) and W2 (output-heavy)
// captures, one core, no recording. Baselines in the same file: the same decode into a fresh
// EngineCoreOutputs per message (what reusing `out` saves), and msgpack-cxx's unpack() with
// limits building its object tree over the same bytes (what a library decoder costs).
//
// Run:
//   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DVMETRICS_BENCH=ON
//   cmake --build build-bench --target decode_bench && build-bench/bench/decode_bench
//
// Recorded result (2-core Intel Xeon (family 6 model 207) KVM guest, g++ 12.2 -O3, 2026-11-30; CPU
// time, best of 5; per message; see bench/README.md for the full table):
//   BM_Decode/w1                1.87 us   1.88 GB/s
//   BM_Decode/w2                9.92 us   1.76 GB/s   25.8 M outputs/s
//   BM_DecodeFreshOutput/w2    47.5 us    (a fresh EngineCoreOutputs per message)
#include <benchmark/benchmark.h>

#include <msgpack.hpp>

#include "bench/bench_util.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics::bench {
namespace {

const Workload& Get(const std::string& name) {
  static const Workload w1 = LoadOrMake("w1");
  static const Workload w2 = LoadOrMake("w2");
  return name == "w1" ? w1 : w2;
}

void BM_Decode(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  EngineCoreOutputs out;
  DecodeContext ctx;
  for (auto _ : state) {
    for (const std::string& m : w.messages) {
      std::string_view frames[] = {m};
      Status s = DecodeEngineCoreOutputs(frames, ctx, &out);
      benchmark::DoNotOptimize(s);
    }
  }
  SetThroughputCounters(state, w);
}

// Baseline: a fresh output struct per message (every vector allocates again).
void BM_DecodeFreshOutput(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  DecodeContext ctx;
  for (auto _ : state) {
    for (const std::string& m : w.messages) {
      EngineCoreOutputs out;
      std::string_view frames[] = {m};
      Status s = DecodeEngineCoreOutputs(frames, ctx, &out);
      benchmark::DoNotOptimize(s);
      benchmark::DoNotOptimize(out);
    }
  }
  SetThroughputCounters(state, w);
}

// Baseline: msgpack-cxx unpack() (zone-allocated object tree, zero-copy strings) with limits.
void BM_MsgpackCxxUnpack(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  const msgpack::unpack_limit limit(1 << 20, 1 << 20, 1 << 24, 1 << 24, 1 << 24, 64);
  const auto reference = [](msgpack::type::object_type, std::size_t, void*) { return true; };
  for (auto _ : state) {
    for (const std::string& m : w.messages) {
      msgpack::object_handle oh = msgpack::unpack(m.data(), m.size(), reference, nullptr, limit);
      benchmark::DoNotOptimize(oh.get().type);
    }
  }
  SetThroughputCounters(state, w);
}

BENCHMARK_CAPTURE(BM_Decode, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_Decode, w2, std::string("w2"));
BENCHMARK_CAPTURE(BM_DecodeFreshOutput, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_DecodeFreshOutput, w2, std::string("w2"));
BENCHMARK_CAPTURE(BM_MsgpackCxxUnpack, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_MsgpackCxxUnpack, w2, std::string("w2"));

}  // namespace
}  // namespace vmetrics::bench

BENCHMARK_MAIN();
