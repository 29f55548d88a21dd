// SPDX-License-Identifier: Apache-2.0
// File: frontend.h
//
// Frontend: a vLLM frontend's metrics path and token API as one object, the runtime of
// `vmetrics serve`. It meets vLLM engines over ZeroMQ (the handshake of `vllm serve --headless`,
// or addresses fixed by a supervisor), builds its recorder from what the engines report in
// their ready responses (max_model_len for the 1-2-5 token buckets, kv_connector, cache
// config, LoRA support), records every EngineCoreOutputs message the engines send, and serves
// on HTTP:
//
//   GET /metrics          every vllm:* family, byte for byte as vLLM's Python frontend
//                         renders it (text 0.0.4 or OpenMetrics, negotiated; http_server.h).
//                         From Bind on, before the engines are in: the engine families only
//                         (vmetrics_engine_up, vmetrics_engine_state); the vllm:* families
//                         appear once Start built the recorder from the ready responses
//   GET /health           200 when every engine is ready; 503 with "starting: N of M engines
//                         ready" while any is starting, and a line naming each dead engine
//   POST /v1/completions  (503 until Start succeeded) the OpenAI completions API with token ids in
//   and out (vmetrics has
//                         no tokenizer): prompts go to the engines as EngineCoreRequests, their
//                         outputs come back whole or streamed (server-sent events), and the
//                         request and iteration families are fed as vLLM's frontend feeds them
//   POST /inference/v1/generate  vLLM's tokens-only API, the same way
//   POST /abort_requests, GET /v1/models, GET /version, GET|POST /ping
//   FrontendOptions::extra_routes, when given.
// The routes and what each honours or refuses: docs/operator-guide.md, "The token API".
//
// Why a library: an embedder (another C++ frontend, a test, a supervisor) gets the whole
// service from a plain options struct, without the `vmetrics` binary or its flag parser;
// failures come back as Status values (kInvalidArgument for bad options, naming the vLLM flag
// the option mirrors; kUnavailable when a socket cannot be bound or the engines do not come).
//
// Lifecycle: construct, Bind (checks the options, serves HTTP, binds the engine sockets:
// engines may connect from here on), Start (waits for every engine, then records), Stop (or
// destroy). Bind and Start are separate so a caller can learn the bound endpoints (an
// ephemeral port) before it starts engines that connect to them.
//
// Logging: one line per event on stderr (engines joining and dying, bad frames logged once,
// HTTP errors), as text or JSON (FrontendOptions::log_format). The format is process-wide: the
// last Frontend constructed sets it.
//
// Thread safety: Bind, Start and Stop are called from one thread at a time, except that Stop
// may be called from another thread while Start waits for engines (Start then fails). The
// accessors and the Wait* functions may be called from any thread once Start succeeded
// (http_port() and RenderText() once Bind succeeded).
//
// Example:
//   FrontendOptions options;
//   options.handshake_address = "tcp://127.0.0.1:0";  // an ephemeral port
//   options.http.port = 0;
//   Frontend frontend(options);
//   Status s = frontend.Bind();
//   ASSERT_TRUE(s.ok()) << s.ToString();
//   StartEngines(frontend.handshake_endpoint());      // e.g. vmetrics simulate
//   s = frontend.Start();
//   ASSERT_TRUE(s.ok()) << s.ToString();
//   // http://127.0.0.1:<frontend.http_port()>/metrics is served from here on.
//   frontend.Stop();
#ifndef VMETRICS_FRONTEND_H_
#define VMETRICS_FRONTEND_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vmetrics/http_server.h"
#include "vmetrics/lora_module.h"
#include "vmetrics/status.h"

namespace vmetrics {

// How the frontend's log lines look on stderr.
enum class LogFormat : uint8_t {
  kText,  // vmetrics: engine 0 joined (max_model_len 8192)
  kJson,  // {"ts":1700000000.123,"level":"info","msg":"engine 0 joined (max_model_len 8192)"}
};

// The largest FrontendOptions::max_label_value_bytes (--max-label-value-bytes): a label value
// is copied into every scrape, and this keeps an exposition's size finite.
inline constexpr size_t kMaxLabelValueBytesLimit = size_t{1} << 20;

// FrontendOptions
//
// Everything a Frontend needs, as plain values. The fields mirror the flags of
// `vmetrics serve`, which are vLLM's own where vLLM has one (the flag is named with each
// field); the defaults are vLLM's and the flags'. Bind checks them and fails with
// kInvalidArgument naming the flag.
struct FrontendOptions {
  // ---- Engines, frontend mode (the default): the engines connect to a handshake socket ----

  // --data-parallel-address, --data-parallel-rpc-port: the handshake ROUTER binds
  // tcp://<address>:<port>, where `vllm serve --headless --data-parallel-address A
  // --data-parallel-rpc-port P` engines say HELLO. The input and output sockets bind on the
  // same host at ephemeral ports, and INIT hands their endpoints to the engines.
  std::string data_parallel_address = "127.0.0.1";
  int data_parallel_rpc_port = 29550;

  // --handshake-address: the whole handshake endpoint ("tcp://0.0.0.0:29550",
  // "ipc:///tmp/hs"), replacing the two above. With port 0 the kernel picks one:
  // Frontend::handshake_endpoint() tells which. An ipc handshake needs input_address and
  // output_address too.
  std::string handshake_address;

  // --advertise-address: the host INIT gives the engines for the data sockets, in place of the
  // one bound; needed when the handshake binds a wildcard ("0.0.0.0", "::", "*": no address an
  // engine on another host can connect to), which Bind refuses without it. "" = the bound
  // host, as vLLM hands engines its --data-parallel-address.
  std::string advertise_address;

  // --data-parallel-size: engines to wait for (data-parallel ranks 0..N-1). 1..65535.
  int data_parallel_size = 1;

  // ---- Engines, bootstrapped mode: addresses fixed by a supervisor ----

  // --input-address, --output-address: the input ROUTER and output PULL endpoints. In
  // frontend mode they override the ephemeral ones.
  std::string input_address;
  std::string output_address;

  // --engine-start-index, --engine-count: engine_count > 0 selects bootstrapped mode, with
  // engines engine_start_index .. engine_start_index + engine_count - 1.
  int engine_start_index = 0;
  int engine_count = 0;

  // --engine-ready-timeout: seconds each startup stage (HELLO, READY, registration) may take
  // before Start fails. vLLM's VLLM_ENGINE_READY_TIMEOUT_S default: loading a model is slow.
  double engine_ready_timeout_s = 600;

  // --engine-stall-timeout: an engine with requests in flight that sends nothing for this long
  // is fenced (RequestService::FenceStalled): its requests end with a 503, /health names it,
  // vmetrics_engine_up is 0 and it gets no new requests until it sends again. A running vLLM
  // engine sends a message every step it has work (a step is bounded by
  // max_num_batched_tokens: well under a second on a GPU), so 10 s of silence is an engine
  // that froze or whose input thread died, not one that is busy. 0 = no stall watch.
  double engine_stall_timeout_s = 10;

  // /health answers 503 "recording is behind" while the engines' outputs have waited longer
  // than this to be read (EngineCoreClient::output_backlog): the metrics and the token API's
  // answers are that late. The stall watch fences no engine while outputs wait unread (the
  // silence may be vmetrics' own). REQUIRES: > 0.
  double output_backlog_limit_s = 5;

  // --engine-control-timeout: how long the development routes that call the engines (/sleep,
  // /wake_up, /pause, ...; VLLM_SERVER_DEV_MODE=1) wait for every engine's answer before they
  // answer 503 naming the silent ones. Waking a large model's weights can take minutes.
  double engine_control_timeout_s = 300;

  // --engine-wire: the engines' wire generation (wire_decoder.h). "auto" recognises each
  // engine from its handshake and first messages; a generation name ("g20260712-370b678a",
  // "g20260712") or a vLLM release a table pins forces that layout for every engine.
  // vmetrics_engine_wire_info{engine,generation,requests} reports what each engine was taken for
  // and the layout its requests are encoded with.
  std::string engine_wire = "auto";

  // ---- Metrics ----

  // --served-model-name: the `model_name` label, and the `model` a completion may name.
  // "" means "model". Otherwise checked like a label value from the wire: valid UTF-8, at most
  // max_label_value_bytes bytes (Bind fails naming the flag).
  std::string served_model_name = "model";

  // --kv-transfer-config: vLLM's KVTransferConfig as JSON ({"kv_connector":"NixlConnector"},
  // MultiConnector with its children). The connectors' families are registered at startup
  // with their zero children, as Python does. "": the connector the engines' ready responses
  // name, if any.
  std::string kv_transfer_config;

  // --ec-transfer-config: vLLM's ECTransferConfig as JSON ({"ec_connector":"ECCPUConnector",
  // "ec_role":"ec_both"}), validated at startup. The EC connector's families are registered
  // after the KV connectors' and fed from SchedulerStats.ec_connector_stats. "" = none.
  std::string ec_transfer_config;

  // --speculative-config: vLLM's speculative config as JSON; num_speculative_tokens (absent,
  // null, or an integer from 1 to 128) > 0 registers the spec-decode families. Any other
  // num_speculative_tokens fails Bind naming the flag.
  std::string speculative_config;

  // --diffusion-model: the served model is a diffusion LLM (vLLM's ModelConfig.is_diffusion,
  // which vLLM reads from the model's HF config: canvas_length set). Its spec-decode stats are
  // exported as the vllm:diffusion_* counters instead of the spec-decode families.
  bool diffusion_model = false;

  // --kv-cache-metrics: registers the KV block residency histograms (vllm:kv_block_*).
  bool kv_cache_metrics = false;

  // --custom-histogram-buckets: vLLM's JSON object from bucket-family key (request_latency,
  // time_to_first_token, inter_token_latency, iteration_tokens, request_params_n,
  // request_num_preemptions, request_tokens, kv_cache_residency) to the upper bounds that
  // replace that family's default buckets; validated as vLLM validates it. "" = defaults.
  std::string custom_histogram_buckets;

  // --show-hidden-metrics-for-version: vLLM's escape hatch for families deprecated in the
  // previous minor release; must parse as a version. Shown when it names the minor release
  // before the engines' reported vLLM version, or for any value when they report none (a
  // development build). No family is hidden at present. "" = not given.
  std::string show_hidden_metrics_for_version;

  // --max-model-len: the top of the 1-2-5 token buckets and the completions' context limit.
  // 0: what the engines' ready responses say (8192 when they say nothing). Negative: Bind fails
  // naming the flag (the flag itself takes 1 to 2^63 - 1, decimal digits only).
  int64_t max_model_len = 0;

  // --cache-config-info: a JSON object of extra vllm:cache_config_info labels, added to (and
  // overriding) what the ready responses tell (block_size, num_gpu_blocks, ...).
  std::string cache_config_info;

  // --disable-created-series: omits the _created samples, as prometheus_client's
  // PROMETHEUS_DISABLE_CREATED_SERIES=True does (the environment variable is honoured too).
  bool disable_created_series = false;

  // --max-label-values-per-family: children a family may grow from label values the engines
  // send (Mooncake store operation/status, connector names); past it samples are dropped and
  // counted in vmetrics_label_values_dropped_total. Bounds the memory a misbehaving engine can
  // make the frontend spend; 0 = no limit.
  size_t max_label_values_per_family = 1000;
  // --max-label-value-bytes: longest label value accepted from the engines; longer ones are
  // refused like new values past the limit above (counted in
  // vmetrics_wire_values_skipped_total{reason="label_value_too_long"}). With the limit above
  // it bounds the exposition's size. From 1 to kMaxLabelValueBytesLimit (1 MiB); anything else
  // fails Bind naming the flag.
  size_t max_label_value_bytes = 1024;

  // ---- LoRA ----

  // --enable-lora, --max-loras: registers vllm:lora_requests_info with max_lora = max_loras
  // (also when the engines' ready responses report LoRA support). max_loras >= 1.
  bool enable_lora = false;
  int64_t max_loras = 1;

  // --lora-modules: the adapters a completion's `model` may name (ParseLoraModules reads
  // vLLM's flag syntax). Requires enable_lora.
  std::vector<LoraModule> lora_modules;

  // ---- Token APIs (POST /v1/completions, POST /inference/v1/generate) ----

  // --eos-token-id: the model's EOS token, which vLLM's frontend takes from the tokenizer and
  // sends in every request (SamplingParams._eos_token_id, unless ignore_eos) so that the engine
  // stops there; -1 = none (then: --generation-config's). Without one, engines never stop at
  // EOS: only max_tokens and stop_token_ids end a request.
  int64_t eos_token_id = -1;

  // --generation-config: a model directory whose generation_config.json (extra EOS ids, the
  // default temperature, top_p, top_k, min_p, repetition_penalty, max_new_tokens) and
  // config.json (vocab_size, eos_token_id) vLLM's frontend would read; "" = none.
  std::string generation_config;

  // --max-logprobs: logprobs and prompt_logprobs a request may ask for (vLLM's default 20);
  // -1 = no limit.
  int64_t max_logprobs = 20;

  // --enable-prompt-tokens-details: usage.prompt_tokens_details.cached_tokens in answers.
  bool enable_prompt_tokens_details = false;

  // --enable-per-request-metrics: completions carry vLLM's per-request `metrics` object
  // (time_to_first_token_ms, generation_time_ms, queue_time_ms, mean_itl_ms,
  // tokens_per_second; docs/operator-guide.md, "Per-request response features"). Off: answers
  // are unchanged.
  bool enable_per_request_metrics = false;

  // --enable-force-include-usage: every completion stream carries usage (a usage chunk before
  // [DONE] and usage on every chunk) as if stream_options asked for it; vLLM's generate
  // endpoint does not read the flag, and neither does vmetrics'.
  bool enable_force_include_usage = false;

  // --per-request-spec-decode-metrics: "none", "summary" or "detailed" (vLLM's flag of PR
  // #48915). Not "none": single-choice answers of both token APIs carry
  // `metrics.speculative_decoding` from the RequestSpecDecodeMetrics the engines send on final
  // outputs (docs/operator-guide.md, "Per-request response features"); "detailed" adds the
  // per-step lists when the engines keep them. Needs --speculative-config with
  // num_speculative_tokens; another value fails Bind naming the flag.
  std::string per_request_spec_decode_metrics = "none";

  // --enable-server-load-tracking: GET /load answers {"server_load": N}, N the token API
  // requests being answered (vLLM's server_load_metrics); without it N is 0, as vLLM's.
  bool enable_server_load_tracking = false;

  // ---- HTTP ----

  // Where to listen and the per-client limits (--host, --port, --http-threads; the defaults
  // are loopback port 8000 with two threads, so nothing is exposed until asked; see
  // http_server.h for each field). http.port 0 picks an ephemeral port. http.api_keys
  // (--api-key, else VLLM_API_KEY in `vmetrics serve`) guards, with http.api_key_path_prefixes
  // left empty, vLLM's API paths /v1, /v2, /inference, /cohere, and /abort_requests.
  HttpServerOptions http;

  // --web-config-file: a Prometheus exporter-toolkit web config (TLS, basic auth, extra
  // headers), read by Bind; replaces http.web_config when set.
  std::string web_config_file;

  // Routes served beside /v1/completions (an embedder's own API); see HttpRoute. Their paths
  // must differ from the frontend's.
  std::vector<HttpRoute> extra_routes;

  // ---- Logging ----

  // --log-format. Process-wide: see the file comment.
  LogFormat log_format = LogFormat::kText;
};

// ParseLoraModules
//
// Reads vLLM's --lora-modules values: "name=path" or a JSON object with string "name" and
// "path". kInvalidArgument naming the flag and the value otherwise.
//
// Example:
//   Result<std::vector<LoraModule>> m = ParseLoraModules({"sql=/a/sql",
//                                                         R"({"name":"chat","path":"/a/c"})"});
//   ASSERT_TRUE(m.ok());
//   EXPECT_EQ((*m)[1].name, "chat");
Result<std::vector<LoraModule>> ParseLoraModules(const std::vector<std::string>& values);

// Frontend
//
// The running service (see the file comment). Not copyable or movable.
class Frontend {
 public:
  explicit Frontend(FrontendOptions options);
  // Stops (see Stop).
  ~Frontend();
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;

  // Bind
  //
  // Checks every option that needs no engine, reads the web config file, starts the HTTP
  // server (so a port in use fails before any engine is waited for, and /metrics and /health
  // answer while the engines load), and binds the engine sockets, so engines can connect from
  // here on. Call once.
  //
  // Failure: kInvalidArgument naming the flag (lora_modules without enable_lora, JSON that is
  // not an object, an unknown connector, a web config file that cannot be read or is wrong,
  // "--host/--port: cannot serve HTTP on ...": the port is in use, the host does not resolve);
  // kUnavailable when an engine socket cannot be bound ("cannot bind the engine sockets: ...":
  // the address is in use or not local).
  //
  // Example:
  //   FrontendOptions o;
  //   o.lora_modules = {{"sql", "/a/sql"}};
  //   EXPECT_EQ(Frontend(o).Bind().code(), StatusCode::kInvalidArgument);
  Status Bind();

  // The bound handshake endpoint (frontend mode) and the input and output endpoints, ports
  // resolved ("tcp://127.0.0.1:40123"). REQUIRES: Bind succeeded.
  std::string handshake_endpoint() const;
  std::string input_endpoint() const;
  std::string output_endpoint() const;

  // Start
  //
  // Waits for every engine (HELLO, INIT, READY, or the bootstrapped registrations; each is
  // `ready` on vmetrics_engine_state as soon as it is), builds the recorder from their ready
  // responses and starts recording and answering /v1/completions. Blocks until then: up to
  // engine_ready_timeout_s per stage. REQUIRES: Bind succeeded.
  //
  // Failure: kUnavailable when the engines do not come in time, break the handshake, or
  // Stop is called meanwhile.
  Status Start();

  // The HTTP port: http.port, or the one the kernel chose for 0. 0 before Bind succeeded.
  uint16_t http_port() const;

  // WaitForDeadEngines
  //
  // Blocks until every engine in `engine_indexes` has been reported dead (ENGINE_CORE_DEAD,
  // or its connections closed, after its outputs were read to the end), or `timeout` passes.
  // True if they all died in time. REQUIRES: Start succeeded.
  bool WaitForDeadEngines(std::span<const int> engine_indexes, std::chrono::milliseconds timeout);

  // WaitForRecorded
  //
  // Blocks until at least `n` messages were recorded (messages_recorded() >= n; messages that
  // failed to decode are not counted), or `timeout` passes. True if they were. One waiter at a
  // time. REQUIRES: Start succeeded.
  bool WaitForRecorded(uint64_t n, std::chrono::milliseconds timeout);

  // The registry's families as text 0.0.4, as a scrape gets them after the process_* families
  // (which change by themselves); "" before Bind succeeded.
  std::string RenderText() const;

  // Messages recorded so far.
  uint64_t messages_recorded() const;

  // Requests the frontend tracks (0 when nothing is in flight) and completions waiting for
  // their answer.
  size_t live_requests() const;
  size_t live_completions() const;

  // Stop
  //
  // Answers every completion in flight 503, stops the HTTP server and the engine client
  // (ending a Start that waits for engines). Idempotent; the destructor calls it. May be
  // called from another thread than Start.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vmetrics

#endif  // VMETRICS_FRONTEND_H_
