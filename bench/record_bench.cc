// SPDX-License-Identifier: Apache-2.0
// record_bench: decode + record, the work the output loop of `vmetrics serve` does for every
// message (src/frontend/frontend.cc: DecodeEngineCoreOutputs into a reused EngineCoreOutputs, then
// StatsRecorder::Record), over the W1 and W2 captures on one core. Also: recording alone
// (messages decoded beforehand), one realistic NIXL/MultiConnector message over and over, and
// the per-child primitives with a
// baseline in the same file: an observation through a resolved Child* against the same
// observation looked up with Family::GetOrCreate every time.
//
// Run:
//   cmake --build build-bench --target record_bench && build-bench/bench/record_bench
//
// Recorded result (2-core Intel Xeon (family 6 model 207) KVM guest, g++ 12.2 -O3, 2026-11-30;
// CPU time, best of 5; per message; bench/README.md has the newest figures and what each
// optimisation bought):
//   BM_DecodeRecord/w1              5.55 us   (180 k messages/s; 6.46 without the list kernel
//                                              and the batch order)
//   BM_DecodeRecord/w2              8.49 us   (30.2 M request outputs/s)
//   BM_DecodeRecordRequests/w2      14.0 us   (18.2 M request outputs/s; 20.0 without the batch
//                                              order)
//   BM_RecordOnly/w1                3.62 us   (4.46 without the list kernel and the batch order)
//   BM_WalkOnly/w1                  2.26 us   (NIXL 0.83, Mooncake store 0.94, Mooncake P2P 0.38)
//   BM_RecordNixlMulti              4.79 us
//   BM_HistogramObserve             15.2 ns
//   BM_HistogramObserveExclusive     4.1 ns   (5.0 without the BucketIndexer)
//   BM_HistogramObserveManyExclusive 1.38 ns per value (a list of 64; 3.4 without CountMany)
//   BM_HistogramObserveLookup       78.6 ns   (baseline: GetOrCreate per observation)
//   BM_CounterAdd / AddExclusive    12.9 ns / 2.3 ns
#include <benchmark/benchmark.h>

#include <cmath>
#include <deque>

#include "bench/bench_util.h"
#include "vmetrics/connector_walk.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/recorder.h"

namespace vmetrics::bench {
namespace {

const Workload& Get(const std::string& name) {
  static const Workload w1 = LoadOrMake("w1");
  static const Workload w2 = LoadOrMake("w2");
  return name == "w1" ? w1 : w2;
}

void BM_DecodeRecord(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  Registry registry;
  StatsRecorder recorder(&registry, RecorderOptionsFor(w));
  EngineCoreOutputs out;
  uint64_t number = 0;
  for (auto _ : state) {
    for (const std::string& m : w.messages) {
      std::string_view frames[] = {m};
      if (!DecodeEngineCoreOutputs(frames, recorder.decode_context(++number), &out).ok()) {
        state.SkipWithError("decode failed");
        return;
      }
      recorder.Record(out);
    }
  }
  SetThroughputCounters(state, w);
}

// W2 with its requests (bench/workloads.h RequestReplay): the output loop of a `serve` that
// sent the requests itself — per message decode, SchedulerStats, and the 256 outputs through
// the RequestTracker into the request and iteration families.
void BM_DecodeRecordRequests(benchmark::State& state) {
  const Workload& w = Get("w2");
  static const RequestReplay replay(w);
  Registry registry;
  StatsRecorder recorder(&registry, RecorderOptionsFor(w));
  EngineCoreOutputs out;
  uint64_t number = 0;
  for (auto _ : state) {
    RequestTracker tracker;  // every pass starts with no live requests
    for (size_t i = 0; i < w.messages.size(); ++i) {
      std::string_view frames[] = {w.messages[i]};
      if (!DecodeEngineCoreOutputs(frames, recorder.decode_context(++number), &out).ok()) {
        state.SkipWithError("decode failed");
        return;
      }
      recorder.Record(out);
      replay.Apply(i, out, &tracker, &recorder);
    }
  }
  SetThroughputCounters(state, w);
}

// Every message of a workload decoded beforehand, with the recorder they were decoded for, for
// the benchmarks that time what comes after.
struct Decoded {
  explicit Decoded(const Workload& w) : recorder(&registry, RecorderOptionsFor(w)) {
    messages.resize(w.messages.size());
    for (size_t i = 0; ok && i < w.messages.size(); ++i) {
      std::string_view frames[] = {w.messages[i]};
      ok = DecodeEngineCoreOutputs(frames, recorder.decode_context(i + 1), &messages[i]).ok();
    }
  }
  Registry registry;
  StatsRecorder recorder;
  std::deque<EngineCoreOutputs> messages;
  bool ok = true;
};

void BM_RecordOnly(benchmark::State& state, const std::string& name) {
  const Workload& w = Get(name);
  Decoded d(w);
  if (!d.ok) {
    state.SkipWithError("decode failed");
    return;
  }
  for (auto _ : state) {
    for (const EngineCoreOutputs& m : d.messages) d.recorder.Record(m);
  }
  SetThroughputCounters(state, w);
}

// The connector walk alone, per connector of W1 ("" = all): ForEachConnectorSample over the
// decoded payloads with a callback that only counts values — what recording costs beyond the
// walk is the recorder's (children, buckets).
void BM_WalkOnly(benchmark::State& state, const std::string& connector) {
  const Workload& w = Get("w1");
  Decoded d(w);
  if (!d.ok) {
    state.SkipWithError("decode failed");
    return;
  }
  // Identified once, as recording does before it walks (not part of the walk's cost).
  const DecodeContext ctx = d.recorder.decode_context(1);
  std::vector<IdentifiedPayloads> identified;
  for (const EngineCoreOutputs& m : d.messages) {
    identified.push_back(d.recorder.ResolveConnectors(*m.scheduler_stats->kv_connector_stats, ctx));
  }
  size_t values = 0;
  const ConnectorSampleFn count = [&](const ConnectorSample& s) { values += s.values.size(); };
  for (auto _ : state) {
    for (const IdentifiedPayloads& ids : identified) {
      for (const IdentifiedPayload& p : ids.payloads) {
        if (p.row != nullptr && (connector.empty() || p.payload.connector == connector)) {
          ForEachConnectorSample(p.payload, *p.row, ctx, count);
        }
      }
    }
  }
  benchmark::DoNotOptimize(values);
  SetThroughputCounters(state, w);
}

// One realistic NIXL/MultiConnector message (W1's first: 64 NIXL transfers, 8 store
// records, 16 Mooncake P2P transfers), decoded and recorded again and again.
void BM_RecordNixlMulti(benchmark::State& state) {
  const Workload& w1 = Get("w1");
  Workload one = w1;
  one.messages.resize(1);
  one.bytes = one.messages[0].size();
  one.outputs = 0;
  Registry registry;
  StatsRecorder recorder(&registry, RecorderOptionsFor(one));
  EngineCoreOutputs out;
  std::string_view frames[] = {one.messages[0]};
  for (auto _ : state) {
    if (!DecodeEngineCoreOutputs(frames, recorder.decode_context(1), &out).ok()) {
      state.SkipWithError("decode failed");
      return;
    }
    recorder.Record(out);
  }
  SetThroughputCounters(state, one);
}

// ---- Per-child primitives ----------------------------------------------------------------

struct NixlHistogram {
  Registry registry;
  Family* family;
  Histogram* child;
  NixlHistogram() {
    family = &registry.AddFamily(
        {"vllm:nixl_xfer_time_seconds",
         MetricType::kHistogram,
         "Histogram of transfer duration for NIXL KV Cache transfers.",
         {"model_name", "engine"},
         {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}});
    for (int e = 0; e < 8; ++e)
      family->GetOrCreate({"meta-llama/Llama-3.1-8B-Instruct", std::to_string(e)});
    child = family->GetOrCreate({"meta-llama/Llama-3.1-8B-Instruct", "7"})->As<Histogram>();
  }
};

// Latencies spread log-uniformly over the buckets, as in the workloads: a bucket search that
// branches cannot predict them (a short repeating list would be learnt).
const std::vector<double>& Values() {
  static const std::vector<double> v = [] {
    std::vector<double> out(4096);
    uint64_t s = 1;
    for (double& x : out) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      x = std::exp(std::log(0.002) +
                   (std::log(2.0) - std::log(0.002)) * (static_cast<double>(s >> 11) * 0x1.0p-53));
    }
    return out;
  }();
  return v;
}

void BM_HistogramObserve(benchmark::State& state) {
  NixlHistogram h;
  const std::vector<double>& values = Values();
  size_t i = 0;
  for (auto _ : state) h.child->Observe(values[i++ & 4095]);
  state.SetItemsProcessed(state.iterations());
}

void BM_HistogramObserveExclusive(benchmark::State& state) {
  NixlHistogram h;
  const std::vector<double>& values = Values();
  size_t i = 0;
  for (auto _ : state) h.child->ObserveExclusive(values[i++ & 4095]);
  state.SetItemsProcessed(state.iterations());
}

// A NIXL list of 64 transfer durations at once (what the connector recorder does per field);
// items are observations.
void BM_HistogramObserveManyExclusive(benchmark::State& state) {
  NixlHistogram h;
  const std::vector<double>& values = Values();
  size_t i = 0;
  for (auto _ : state) {
    h.child->ObserveManyExclusive(std::span<const double>(values).subspan(i & 4032, 64));
    i += 64;
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

// Baseline: the child looked up by its label values for every observation.
void BM_HistogramObserveLookup(benchmark::State& state) {
  NixlHistogram h;
  const std::vector<std::string> labels = {"meta-llama/Llama-3.1-8B-Instruct", "7"};
  const std::vector<double>& values = Values();
  size_t i = 0;
  for (auto _ : state) {
    static_cast<Histogram*>(h.family->GetOrCreate(labels))->Observe(values[i++ & 4095]);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_CounterAdd(benchmark::State& state) {
  Registry registry;
  Counter* c = registry.AddFamily({"vllm:prompt_tokens", MetricType::kCounter, "P.", {"engine"}})
                   .GetOrCreate({"0"})
                   ->As<Counter>();
  for (auto _ : state) benchmark::DoNotOptimize(c->Add(3.0));
  state.SetItemsProcessed(state.iterations());
}

void BM_CounterAddExclusive(benchmark::State& state) {
  Registry registry;
  Counter* c = registry.AddFamily({"vllm:prompt_tokens", MetricType::kCounter, "P.", {"engine"}})
                   .GetOrCreate({"0"})
                   ->As<Counter>();
  for (auto _ : state) benchmark::DoNotOptimize(c->AddExclusive(3.0));
  state.SetItemsProcessed(state.iterations());
}

void BM_GaugeSet(benchmark::State& state) {
  Registry registry;
  Gauge* c = registry.AddFamily({"vllm:num_requests_running", MetricType::kGauge, "R.", {"engine"}})
                 .GetOrCreate({"0"})
                 ->As<Gauge>();
  double v = 0;
  for (auto _ : state) c->Set(v += 1.0);
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(BM_DecodeRecord, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_DecodeRecord, w2, std::string("w2"));
BENCHMARK(BM_DecodeRecordRequests)->Name("BM_DecodeRecordRequests/w2");
BENCHMARK_CAPTURE(BM_RecordOnly, w1, std::string("w1"));
BENCHMARK_CAPTURE(BM_RecordOnly, w2, std::string("w2"));
BENCHMARK(BM_RecordNixlMulti);
BENCHMARK_CAPTURE(BM_WalkOnly, w1, std::string());
BENCHMARK_CAPTURE(BM_WalkOnly, w1_nixl, std::string("NixlConnector"));
BENCHMARK_CAPTURE(BM_WalkOnly, w1_mooncake_store, std::string("MooncakeStoreConnector"));
BENCHMARK_CAPTURE(BM_WalkOnly, w1_mooncake_p2p, std::string("MooncakeConnector"));
BENCHMARK(BM_HistogramObserve);
BENCHMARK(BM_HistogramObserveExclusive);
BENCHMARK(BM_HistogramObserveManyExclusive);
BENCHMARK(BM_HistogramObserveLookup);
BENCHMARK(BM_CounterAdd);
BENCHMARK(BM_CounterAddExclusive);
BENCHMARK(BM_GaugeSet);

}  // namespace
}  // namespace vmetrics::bench

BENCHMARK_MAIN();
