// SPDX-License-Identifier: Apache-2.0
// memory_bench: heap bytes per counter, gauge and histogram child, measured as glibc
// mallinfo2() deltas (uordblks: bytes in use, chunk headers and rounding included). Children
// are created the way a frontend creates them: 96 families x 64 engines with the labels
// (model_name, engine), so label values repeat across families as they do in vLLM's registry.
// The families themselves (name, HELP, buckets) are registered before the first measurement
// and are not counted; everything a child adds, including its share of the family's child
// lists, is. Baseline in the same file: a bare std::vector<std::string> of the same label
// values per child, what the labels alone cost when every child owns copies.
//
// Run:
//   cmake --build build-bench --target memory_bench && build-bench/bench/memory_bench
//
// Recorded result (2-core Intel Xeon (family 6 model 207) KVM guest, g++ 12.2 -O3, 2026-11-30; see
// bench/README.md):
//   BM_MemoryPerChild/counter            bytes_per_child=88.8
//   BM_MemoryPerChild/gauge              bytes_per_child=88.3
//   BM_MemoryPerChild/histogram15        bytes_per_child=200
//   BM_MemoryLabelCopiesBaseline         bytes_per_child=128 (labels alone, copied per child)
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <memory>

#include "vmetrics/registry.h"

namespace vmetrics::bench {
namespace {

constexpr int kFamilies = 96;
constexpr int kEngines = 64;
const char* const kModel = "meta-llama/Llama-3.1-8B-Instruct";

size_t HeapInUse() { return mallinfo2().uordblks; }

void BM_MemoryPerChild(benchmark::State& state, MetricType type, size_t buckets) {
  double per_child = 0;
  for (auto _ : state) {
    auto registry = std::make_unique<Registry>();
    std::vector<Family*> families;
    for (int f = 0; f < kFamilies; ++f) {
      FamilySpec spec;
      spec.name = "vllm:family_" + std::to_string(f);
      spec.type = type;
      spec.help = "A family.";
      spec.label_names = {"model_name", "engine"};
      for (size_t b = 0; b < buckets; ++b)
        spec.buckets.push_back(0.001 * static_cast<double>(1 << b));
      families.push_back(&registry->AddFamily(std::move(spec)));
    }
    std::vector<std::string> engines;
    for (int e = 0; e < kEngines; ++e) engines.push_back(std::to_string(e));
    const size_t before = HeapInUse();
    for (Family* f : families) {
      for (const std::string& e : engines) benchmark::DoNotOptimize(f->GetOrCreate({kModel, e}));
    }
    const size_t after = HeapInUse();
    per_child = static_cast<double>(after - before) / (kFamilies * kEngines);
  }
  state.counters["bytes_per_child"] = per_child;
  state.counters["buckets"] = static_cast<double>(buckets == 0 ? 0 : buckets + 1);
}

// Baseline: only the label values, copied into a std::vector<std::string> per child.
void BM_MemoryLabelCopiesBaseline(benchmark::State& state) {
  double per_child = 0;
  for (auto _ : state) {
    std::vector<std::vector<std::string>> labels;
    labels.reserve(kFamilies * kEngines);
    const size_t before = HeapInUse();
    for (int f = 0; f < kFamilies; ++f) {
      for (int e = 0; e < kEngines; ++e) labels.push_back({kModel, std::to_string(e)});
    }
    const size_t after = HeapInUse();
    per_child = static_cast<double>(after - before) / (kFamilies * kEngines);
    benchmark::DoNotOptimize(labels.data());
  }
  state.counters["bytes_per_child"] = per_child;
}

BENCHMARK_CAPTURE(BM_MemoryPerChild, counter, MetricType::kCounter, 0)->Iterations(1);
BENCHMARK_CAPTURE(BM_MemoryPerChild, gauge, MetricType::kGauge, 0)->Iterations(1);
// 14 bounds + the implied +Inf = 15 buckets (NIXL's num_descriptors histogram).
BENCHMARK_CAPTURE(BM_MemoryPerChild, histogram15, MetricType::kHistogram, 14)->Iterations(1);
BENCHMARK(BM_MemoryLabelCopiesBaseline)->Iterations(1);

}  // namespace
}  // namespace vmetrics::bench

BENCHMARK_MAIN();
