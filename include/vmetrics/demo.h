// SPDX-License-Identifier: Apache-2.0
// File: demo.h
//
// RunDemo: what `vmetrics demo` does, a first look at vmetrics in one process on loopback.
// Stand-in engines (src/simulate) meet a Frontend (vmetrics/frontend.h) through the real
// handshake and serve its requests; a load generator (tools/loadgen) sends completions through
// the HTTP endpoint, so the request families (TTFT, ITL, latencies, tokens by source, finish
// reasons, request histograms) move along with the scheduler and connector ones. LoRA is on,
// with two adapters the load generator names in turn with the base model, so
// vllm:lora_requests_info shows them. After a few seconds an excerpt of /metrics is printed on
// stdout; the demo runs on until SIGINT, SIGTERM or the duration. With DemoOptions::pd, a
// prefill/decode disaggregated pair behind a router instead (see `pd`).
//
// Not a product library: it links the stand-in engine and the load generator (libcurl).
//
// Thread safety: call from the main thread before any other thread starts (the stop signals
// are blocked for the whole process).
//
// Example:
//   DemoOptions o;
//   o.duration_s = 10;
//   o.port = 0;
//   Status s = RunDemo(o);
#ifndef VMETRICS_DEMO_DEMO_H_
#define VMETRICS_DEMO_DEMO_H_

#include <cstdint>
#include <string>

#include "vmetrics/frontend.h"
#include "vmetrics/simulator.h"
#include "vmetrics/status.h"

namespace vmetrics::demo {

struct DemoOptions {
  // Stand-in engines (data-parallel ranks), the KV connector whose statistics they send (the
  // frontend is configured for it), their steps per second, and the seed of everything random.
  int engines = 2;
  SimConnector connector = SimConnector::kMulti;
  double rate_hz = 20;
  uint64_t seed = 1;
  // Completions per second through /v1/completions; 0 = none, and the engines make up their
  // own requests instead.
  double request_rate = 8;
  // Seconds to run; 0 = until SIGINT or SIGTERM.
  double duration_s = 0;
  // The HTTP port (0 = ephemeral), the model name, the log format.
  uint16_t port = 8000;
  std::string served_model_name = "demo-model";
  LogFormat log_format = LogFormat::kText;
  // Prefill/decode disaggregation instead: a prefill and a decode frontend (HTTP on `port` and
  // `port` + 1, or ephemeral), each with one stand-in engine in NIXL's producer or consumer
  // role (SimulatorOptions::kv_role), and an in-process router sending /v1/completions and
  // /inference/v1/generate requests in turn through both, as vLLM's NIXL toy proxy does, at
  // `request_rate` (4 per second when 0). The excerpts show both /metrics: request families on
  // both sides, the vllm:nixl_* families moving on the decode side only. `engines` and
  // `connector` are not used.
  bool pd = false;
};

// Ok once stopped. kUnavailable when a socket cannot be bound or the HTTP port is taken (the
// message suggests --port 0), or the stand-in engines cannot start.
Status RunDemo(const DemoOptions& args);

}  // namespace vmetrics::demo

#endif  // VMETRICS_DEMO_DEMO_H_
