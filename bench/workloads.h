// SPDX-License-Identifier: Apache-2.0
// File: bench/workloads.h
//
// The benchmark workloads (bench/README.md), generated deterministically (same seed, same bytes on
// every machine) as the frame 0 an engine sends, encoded the way msgspec encodes them (the
// layout of src/simulate/wire_encode.cc: array_like structs as arrays of every position,
// dataclasses as maps of every field, floats as float64):
//
//   W1 stats-heavy   stats-only messages from 8 engines; MultiConnector of NIXL (64 transfers per
//                    step), Mooncake store (8 records) and Mooncake P2P (16 transfers).
//   W2 output-heavy  one engine; 256 request outputs per message (one new token each, QUEUED and
//                    SCHEDULED events plus prefill stats on a request's first output, about one
//                    finish per 128 outputs) plus SchedulerStats.
//   W3 scrape        N engines (64 for the main figure; also 1 and 8), every family
//   populated: spec decode,
//                    KV residency, MultiConnector of NIXL + Mooncake store + Mooncake P2P + HF3FS,
//                    cache_config_info, and the request families fed by FeedRequestFamilies().
//
// `vmetrics_bench_gen` writes them to bench/captures/ for the Python reference
// (bench/python_reference.py), and the C++ benchmarks read the same files when
// VMETRICS_BENCH_CAPTURES names that directory (otherwise they generate identical bytes).
//
// Thread safety: pure functions.
#ifndef VMETRICS_BENCH_WORKLOADS_H_
#define VMETRICS_BENCH_WORKLOADS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"
#include "vmetrics/requests.h"

namespace vmetrics::bench {

struct Workload {
  std::string name;                   // "w1", "w2", "w3"
  std::vector<std::string> messages;  // frame 0 of each message, in send order
  // How a frontend must be configured to record it (also the `vmetrics replay` flags).
  int engines = 1;
  std::string kv_transfer_config;  // JSON, "" = none
  int num_speculative_tokens = 0;
  bool kv_cache_metrics = false;
  std::vector<std::pair<std::string, std::string>> cache_config;  // vllm:cache_config_info
  // Totals over `messages`.
  uint64_t bytes = 0;
  uint64_t outputs = 0;               // EngineCoreOutput entries
  uint64_t prefix_cache_queries = 0;  // sum of prefix_cache_stats.queries (end-to-end check)
};

// Message counts of the full run and of `bench/compare --smoke`.
inline constexpr size_t kW1Messages = 4096;
inline constexpr size_t kW2Messages = 512;
inline constexpr size_t kW1SmokeMessages = 64;
inline constexpr size_t kW2SmokeMessages = 16;
inline constexpr int kW3Engines = 64;
inline constexpr int kW3StepsPerEngine = 4;
inline constexpr uint64_t kSeed = 7;

Workload MakeW1(size_t messages, uint64_t seed = kSeed);
Workload MakeW2(size_t messages, uint64_t seed = kSeed);
Workload MakeW3(int engines, int steps_per_engine = kW3StepsPerEngine, uint64_t seed = kSeed);

// The workload `name` ("w1", "w2", "w3" = W3 for 64 engines, "w3_1" and "w3_8" = W3 for 1 and
// 8 engines; `smoke`, or $VMETRICS_BENCH_SMOKE set, shrinks W1 and W2): read from
// $VMETRICS_BENCH_CAPTURES/<name>.msgpack when that variable is set (the file must hold the same
// messages the generator makes; checked by size), else generated. Aborts with a message when the
// capture is unreadable or different.
Workload LoadOrMake(std::string_view name, bool smoke = false);

// The recorder options `vmetrics replay` / `serve` would use for the workload.
RecorderOptions RecorderOptionsFor(const Workload& w);

// Feeds every request/iteration family (the ones SchedulerStats does not feed) with
// deterministic values: per family (index f in registration order among them), per child
// (index c, creation order), counters += 1.5 * (c + 1) * (f + 1) and histograms observe
// 8 values base * (1 + (7c + 13j + f) % 50) / 8 (base 16 tokens, 0.05 s, or 1 for params_n).
// bench/python_reference.py applies the same formula, so both renderings stay byte-identical.
void FeedRequestFamilies(Registry* registry);

// The request side of W2 ("W2 with its requests"): what `serve`'s output loop does per message
// when it sent the requests itself — decode, record SchedulerStats, run the outputs through the
// RequestTracker, record the IterationStats. The frontend's intake is derived from the capture
// once: before message i, every request whose first output (the one with prefill_stats) is in
// message i is added with arrival_time = message timestamp - 0.1, prompt_len =
// num_prompt_tokens, max_tokens 2048, n 1; the iteration timestamp (the frontend's time.time())
// is the message timestamp + 0.005. bench/python_reference.py follows the same rules with
// tools/gen_request_goldens.py's Python frontend, so both renderings stay byte-identical.
class RequestReplay {
 public:
  explicit RequestReplay(const Workload& w);  // decodes every message once; aborts on failure
  // A fresh tracker's work for message `i` (already decoded into `out`): adds its requests,
  // processes its outputs, records the iteration. The caller records SchedulerStats.
  void Apply(size_t i, const EngineCoreOutputs& out, RequestTracker* tracker,
             StatsRecorder* recorder) const;

 private:
  std::vector<std::vector<RequestInfo>> intake_;  // per message
};

// Splits a capture (concatenated msgpack values) into messages. Aborts on malformed input.
std::vector<std::string> SplitCapture(std::string_view data);

// Reads a whole file; aborts when it cannot.
std::string ReadFileOrDie(const std::string& path);

}  // namespace vmetrics::bench

#endif  // VMETRICS_BENCH_WORKLOADS_H_
