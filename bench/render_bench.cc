// SPDX-License-Identifier: Apache-2.0
// render_bench: rendering the W3 registry (every family populated) for 1, 8 and 64 engines in
// the text format (WriteText, what /metrics serves by default) and OpenMetrics, each with and
// without gzip (GzipCompress, what a Prometheus scrape with Accept-Encoding: gzip gets). Every
// render appends to a fresh std::string, as the HTTP handler does; the baseline in the same
// file renders into one reused buffer (capacity kept) to show what allocation costs.
//
// Run:
//   cmake --build build-bench --target render_bench && build-bench/bench/render_bench
//   build-bench/bench/render_bench --dump=DIR   # writes DIR/w3_<engines>.{txt,om}, w1.txt and
//                                               # w2.txt, and exits (bench/compare diffs them
//                                               # with bench/python_reference.py dump's)
//
// Recorded result (2-core Intel Xeon (family 6 model 207) KVM guest, g++ 12.2 -O3, 2026-11-30; CPU
// time, best of 5; see bench/README.md):
//   BM_Render/Text/engines:64             2.20 ms   5.43 MB
//   BM_Render/OpenMetrics/engines:64      2.19 ms
//   BM_Render/TextGzip/engines:64        15.1 ms    254 kB
//   BM_Render/Text/engines:1 / 8          70 us / 307 us
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "bench/workloads.h"
#include "vmetrics/exposition.h"
#include "vmetrics/recorder.h"

namespace vmetrics::bench {
namespace {

// The `_created` value of every child: the Python reference pins time.time() to it too.
constexpr double kCreated = 123.456;

// A registry holding W3 for `engines` engines: the capture recorded, the request families fed.
struct W3Registry {
  FixedClock clock{kCreated};
  Registry registry{&clock};
  std::unique_ptr<StatsRecorder> recorder;
  explicit W3Registry(int engines) {
    const Workload w = LoadOrMake(engines == kW3Engines ? "w3" : "w3_" + std::to_string(engines));
    recorder = std::make_unique<StatsRecorder>(&registry, RecorderOptionsFor(w));
    EngineCoreOutputs out;
    uint64_t n = 0;
    for (const std::string& m : w.messages) {
      std::string_view frames[] = {m};
      if (!DecodeEngineCoreOutputs(frames, recorder->decode_context(++n), &out).ok()) {
        std::fprintf(stderr, "render_bench: W3 message %llu does not decode\n",
                     static_cast<unsigned long long>(n));
        std::exit(2);
      }
      recorder->Record(out);
    }
    FeedRequestFamilies(&registry);
  }
};

const W3Registry& Get(int engines) {
  static std::map<int, std::unique_ptr<W3Registry>> cache;
  auto& slot = cache[engines];
  if (!slot) slot = std::make_unique<W3Registry>(engines);
  return *slot;
}

std::string Render(const Registry& r, ExpositionFormat f) {
  std::string out;
  if (f == ExpositionFormat::kOpenMetrics) {
    WriteOpenMetrics(r, {}, &out);
  } else {
    WriteText(r, {}, &out);
  }
  return out;
}

void Report(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
  state.counters["renders_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Render(benchmark::State& state, ExpositionFormat format, bool gzip) {
  const Registry& r = Get(static_cast<int>(state.range(0))).registry;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = Render(r, format);
    bytes = out.size();
    if (gzip) {
      std::string z;
      if (!GzipCompress(out, &z)) {
        state.SkipWithError("gzip failed");
        return;
      }
      state.counters["gzip_bytes"] = static_cast<double>(z.size());
    }
    benchmark::DoNotOptimize(out.data());
  }
  Report(state, bytes);
}

// Baseline: one buffer reused across renders (no growth reallocations after the first).
void BM_RenderTextReusedBuffer(benchmark::State& state) {
  const Registry& r = Get(static_cast<int>(state.range(0))).registry;
  std::string out;
  for (auto _ : state) {
    out.clear();
    WriteText(r, {}, &out);
    benchmark::DoNotOptimize(out.data());
  }
  Report(state, out.size());
}

void Engines(benchmark::internal::Benchmark* b) {
  b->ArgName("engines")->Arg(1)->Arg(8)->Arg(kW3Engines)->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_Render, Text, ExpositionFormat::kText, false)->Apply(Engines);
BENCHMARK_CAPTURE(BM_Render, OpenMetrics, ExpositionFormat::kOpenMetrics, false)->Apply(Engines);
BENCHMARK_CAPTURE(BM_Render, TextGzip, ExpositionFormat::kText, true)->Apply(Engines);
BENCHMARK_CAPTURE(BM_Render, OpenMetricsGzip, ExpositionFormat::kOpenMetrics, true)->Apply(Engines);
BENCHMARK(BM_RenderTextReusedBuffer)->Apply(Engines);

// --dump=DIR: write the renderings bench/compare compares with Python's, byte for byte.
int Dump(const std::string& dir) {
  for (int engines : {1, 8, kW3Engines}) {
    const Registry& r = Get(engines).registry;
    for (ExpositionFormat f : {ExpositionFormat::kText, ExpositionFormat::kOpenMetrics}) {
      const std::string path =
          dir + "/w3_" + std::to_string(engines) + (f == ExpositionFormat::kText ? ".txt" : ".om");
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << Render(r, f);
      if (!out) return 1;
    }
  }
  // W1 and W2 recorded whole, as `vmetrics replay` would: the check that the Python reference
  // records exactly what vmetrics records.
  // "w2_requests": W2 with its requests known (RequestReplay), the request families included.
  for (const std::string name : {"w1", "w2", "w2_requests"}) {
    const bool with_requests = name == "w2_requests";
    const Workload w = LoadOrMake(with_requests ? "w2" : name);
    FixedClock clock(kCreated);
    Registry registry(&clock);
    StatsRecorder recorder(&registry, RecorderOptionsFor(w));
    std::optional<RequestReplay> replay;
    if (with_requests) replay.emplace(w);
    RequestTracker tracker;
    EngineCoreOutputs decoded;
    for (size_t i = 0; i < w.messages.size(); ++i) {
      std::string_view frames[] = {w.messages[i]};
      if (DecodeEngineCoreOutputs(frames, recorder.decode_context(i + 1), &decoded).ok()) {
        recorder.Record(decoded);
        if (replay) replay->Apply(i, decoded, &tracker, &recorder);
      }
    }
    std::ofstream out(dir + "/" + name + ".txt", std::ios::binary | std::ios::trunc);
    out << Render(registry, ExpositionFormat::kText);
    if (!out) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace vmetrics::bench

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--dump=", 7) == 0) return vmetrics::bench::Dump(argv[i] + 7);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
