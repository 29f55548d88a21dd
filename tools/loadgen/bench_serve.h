// SPDX-License-Identifier: Apache-2.0
// File: bench_serve.h
//
// BenchServe: what `vmetrics bench-serve` does, the frontend's own benchmark. It sends
// token-id completions to a running `vmetrics serve` (or any OpenAI-compatible server that
// takes token-id prompts) at a given rate and concurrency, over http:// or https:// with basic
// authentication when asked, and reports throughput and TTFT / end-to-end latency percentiles
// (load_generator.h).
//
// Thread safety: BenchServe blocks the calling thread until the run ends.
//
// Example:
//   BenchServeOptions o;
//   o.load.url = "https://10.0.0.5:8000/v1/completions";
//   o.load.client.ca_file = "ca.pem";
//   o.load.requests = 200;
//   Result<LoadReport> r = BenchServe(o, [](std::string_view s) { std::fputs(...); });
#ifndef VMETRICS_TOOLS_LOADGEN_BENCH_SERVE_H_
#define VMETRICS_TOOLS_LOADGEN_BENCH_SERVE_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "loadgen/load_generator.h"
#include "vmetrics/status.h"

namespace vmetrics::loadgen {

struct BenchServeOptions {
  // Where and how to send (url, client, requests, duration, rate, concurrency, n, models,
  // seed). Every request has the same prompt length and max_tokens, and ignore_eos, so each
  // generates exactly max_tokens tokens.
  LoadOptions load;
  int64_t prompt_len = 128;
  int64_t max_tokens = 64;
};

// BenchServe
//
// Prints a line saying what it sends, runs the load and prints the report (FormatLoadReport),
// through `print`. Returns the report; kInvalidArgument, before sending anything, for a URL
// that is not http:// or https://, or for neither requests nor a duration.
Result<LoadReport> BenchServe(BenchServeOptions options,
                              const std::function<void(std::string_view)>& print);

}  // namespace vmetrics::loadgen

#endif  // VMETRICS_TOOLS_LOADGEN_BENCH_SERVE_H_
