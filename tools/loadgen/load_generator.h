// SPDX-License-Identifier: Apache-2.0
// File: load_generator.h
//
// LoadGenerator: sends token-id completions (POST /v1/completions, streamed so the first token
// can be timed, or for whole answers) at a given request rate (Poisson arrivals, as vLLM's
// benchmark_serving sends them) with at most `concurrency` in flight, and reports throughput and
// latency percentiles. `vmetrics bench-serve` prints its report; `vmetrics demo` runs it in the
// background so every request family moves.
//
// Each of the `concurrency` workers keeps one connection (HttpClient, http_client.h) and sends
// its requests on it one after the other, as benchmark clients with a connection pool do.
//
// Thread safety: Run blocks the calling thread (and uses `concurrency` threads of its own);
// RequestStop may be called from any thread.
//
// Example:
//   LoadOptions o;
//   o.url = "http://127.0.0.1:8000/v1/completions";
//   o.requests = 100;
//   o.rate = 20;
//   LoadReport r = LoadGenerator(o).Run();
//   std::printf("%s", FormatLoadReport(r).c_str());
#ifndef VMETRICS_TOOLS_LOADGEN_LOAD_GENERATOR_H_
#define VMETRICS_TOOLS_LOADGEN_LOAD_GENERATOR_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "loadgen/http_client.h"

namespace vmetrics::loadgen {

struct LoadOptions {
  // The completions endpoint (http:// or https://), or a URL ending in
  // /inference/v1/generate (the same fields sent in a GenerateRequest), and how to reach it: a
  // CA file for https, basic-auth credentials, the timeout (http_client.h).
  std::string url = "http://127.0.0.1:8000/v1/completions";
  HttpClientOptions client;
  uint64_t requests = 100;  // requests to send; 0 = until duration_s or RequestStop
  double duration_s = 0;    // stop sending after this long; 0 = no limit
  double rate = 0;          // requests per second (Poisson); 0 = as fast as concurrency allows
  int concurrency = 8;      // requests in flight at most
  // Prompt length and max_tokens of each request, drawn uniformly from [min, max].
  int64_t prompt_len_min = 64;
  int64_t prompt_len_max = 64;
  int64_t max_tokens_min = 32;
  int64_t max_tokens_max = 32;
  int64_t n = 1;
  bool ignore_eos = true;  // every request generates max_tokens tokens
  // Streamed (every token an event; TTFT is the first event with tokens), or `"stream": false`
  // (one answer; TTFT is then the whole answer's time, as for the client).
  bool stream = true;
  // The `model` of each request, taken in turn (a base model and LoRA adapters); none = not
  // sent.
  std::vector<std::string> models;
  uint64_t seed = 0;
};

struct LoadReport {
  uint64_t completed = 0;  // 200 and [DONE]
  uint64_t failed = 0;     // anything else
  std::string first_error;
  double duration_s = 0;
  uint64_t prompt_tokens = 0;
  uint64_t output_tokens = 0;
  // Milliseconds, over completed requests: p50, p90, p99 and mean.
  double ttft_ms[4] = {0, 0, 0, 0};
  double e2e_ms[4] = {0, 0, 0, 0};
  double tpot_ms_mean = 0;  // (e2e - ttft) / (output tokens - 1), averaged
};

class LoadGenerator {
 public:
  explicit LoadGenerator(LoadOptions options) : options_(std::move(options)) {}
  // Sends the load and returns the report once every request finished.
  LoadReport Run();
  // Sends nothing more; requests in flight finish.
  void RequestStop() { stop_.store(true); }

 private:
  LoadOptions options_;
  std::atomic<bool> stop_{false};
};

// The report as text: counts, throughput and the percentiles, one per line.
std::string FormatLoadReport(const LoadReport& report);

}  // namespace vmetrics::loadgen

#endif  // VMETRICS_TOOLS_LOADGEN_LOAD_GENERATOR_H_
