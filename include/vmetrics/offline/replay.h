// SPDX-License-Identifier: Apache-2.0
// File: replay.h
//
// Replay: what `vmetrics replay` does. A capture of EngineCoreOutputs messages (capture.h) is
// recorded by a StatsRecorder configured as a frontend with these options would be, and the
// exposition is returned. With a requests sidecar (requests_sidecar.h) the outputs also go
// through a RequestTracker, so the request and iteration families are fed as the frontend
// that sent the requests fed them. The golden tests hold it to prometheus_client's rendering
// byte for byte.
//
// Thread safety: free function without shared state.
//
// Example:
//   ReplayOptions o;
//   o.input = "tests/fixtures/kv_nixl.msgpack";
//   o.kv_transfer_config = R"({"kv_connector":"NixlConnector"})";
//   o.created_timestamp = 0;
//   Result<ReplayOutput> out = Replay(o);
//   ASSERT_TRUE(out.ok()) << out.status().ToString();
//   std::fputs(out->exposition.c_str(), stdout);
#ifndef VMETRICS_FRONTEND_REPLAY_H_
#define VMETRICS_FRONTEND_REPLAY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/exposition.h"
#include "vmetrics/status.h"
#include "vmetrics/wire_decoder.h"

namespace vmetrics::frontend {

struct ReplayOptions {
  // The capture: concatenated msgpack EngineCoreOutputs ("-" = stdin). Required.
  std::string input;

  // As FrontendOptions: the `model_name` label, engines 0..data_parallel_size-1 (their eager
  // children), vLLM's KVTransferConfig JSON, the 1-2-5 token buckets' top, the speculative
  // config JSON, the residency histograms, LoRA (vllm:lora_requests_info with max_lora).
  std::string served_model_name = "model";
  int64_t data_parallel_size = 1;
  std::string kv_transfer_config;
  std::string ec_transfer_config;  // --ec-transfer-config, as FrontendOptions
  int64_t max_model_len = 8192;
  std::string speculative_config;
  bool diffusion_model = false;  // --diffusion-model, as FrontendOptions
  bool kv_cache_metrics = false;
  // vLLM's --custom-histogram-buckets JSON ("" = defaults) and
  // --show-hidden-metrics-for-version ("" = not given); as FrontendOptions.
  std::string custom_histogram_buckets;
  std::string show_hidden_metrics_for_version;
  bool enable_lora = false;
  int64_t max_loras = 1;

  // The exposition format, and whether _created samples are left out
  // (PROMETHEUS_DISABLE_CREATED_SERIES=True also does).
  ExpositionFormat format = ExpositionFormat::kText;
  bool disable_created_series = false;

  // >= 0: every _created value is this Unix time, so the output is reproducible; < 0: the
  // wall clock when each family was made.
  double created_timestamp = -1;

  // The frontend-side sidecar (JSON lines; requests_sidecar.h); "" = none, and the request
  // and iteration families stay empty. A relative path that does not exist is also tried next
  // to the capture, so a capture and its sidecar travel together.
  std::string requests;

  // --engine-wire: "auto" recognises each engine's wire generation from its messages
  // (wire_decoder.h); a generation name or vLLM release forces that table.
  std::string engine_wire = "auto";

  // Where the messages of the replay go (a message that does not decode, once-logged
  // recording problems, each engine's wire generation), one line each without a newline.
  // nullptr = dropped.
  std::function<void(std::string_view)> log;
};

struct ReplayOutput {
  std::string exposition;                     // in options.format
  uint64_t failed_messages = 0;               // messages that did not decode (skipped, and counted)
  std::vector<WireRecognition> recognitions;  // each engine's wire generation
};

// Replay
//
// Failure (kInvalidArgument, naming the flag) for options that cannot be used: bad JSON, an
// unknown --engine-wire, an unreadable capture or sidecar, a sidecar line that is wrong. Messages
// that do not decode are not failures: they are skipped, counted in vmetrics_decode_errors_total
// and in failed_messages, and logged.
Result<ReplayOutput> Replay(const ReplayOptions& args);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_REPLAY_H_
