// SPDX-License-Identifier: Apache-2.0
// vmetrics serve: the flags of a Frontend (include/vmetrics/frontend.h), then
// frontend::Serve until SIGINT or SIGTERM.
#include "vmetrics/frontend/serve.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "vmetrics/frontend.h"
#include "vmetrics/frontend/log.h"

namespace vmetrics::cli {
namespace {

// FrontendOptions, plus the flags whose values need converting first.
struct ServeFlags {
  FrontendOptions options;
  int port = 8000;
  std::vector<std::string> lora_modules;
  std::string log_format = "text";
  std::string log_level = "info";
};

void AddFrontendFlags(CLI::App* cmd, ServeFlags* f) {
  FrontendOptions* a = &f->options;
  cmd->add_option("--served-model-name", a->served_model_name, "model_name label (default: model)");
  cmd->add_option("--kv-transfer-config", a->kv_transfer_config,
                  "vLLM's KVTransferConfig JSON; default: the engines' kv_connector");
  cmd->add_option("--ec-transfer-config", a->ec_transfer_config,
                  "vLLM's ECTransferConfig JSON (the EC connector whose families are recorded)");
  cmd->add_option("--data-parallel-size", a->data_parallel_size,
                  "Engines to wait for in frontend mode")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--data-parallel-address", a->data_parallel_address,
                  "Handshake address engines connect to (vLLM's flag)");
  cmd->add_option("--data-parallel-rpc-port", a->data_parallel_rpc_port,
                  "Handshake port engines connect to (vLLM's flag)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--handshake-address", a->handshake_address,
                  "Full ZeroMQ handshake endpoint (overrides the two above), e.g. ipc:///tmp/hs");
  cmd->add_option("--advertise-address", a->advertise_address,
                  "Host given to engines for the data sockets instead of the bound one "
                  "(required when binding 0.0.0.0)");
  cmd->add_option("--input-address", a->input_address, "Bootstrapped mode: input ROUTER address");
  cmd->add_option("--output-address", a->output_address, "Bootstrapped mode: output PULL address");
  cmd->add_option("--engine-start-index", a->engine_start_index, "Bootstrapped mode: first engine")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--engine-count", a->engine_count,
                  "Bootstrapped mode: engines to wait for (selects bootstrapped mode)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--engine-ready-timeout", a->engine_ready_timeout_s,
                  "Seconds to wait for each startup stage")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--engine-stall-timeout", a->engine_stall_timeout_s,
                  "Seconds an engine with requests in flight may send nothing before it is "
                  "fenced (its requests end with a 503, /health names it) until it sends again; "
                  "0 = off")
      ->capture_default_str();
  cmd->add_option("--engine-control-timeout", a->engine_control_timeout_s,
                  "Seconds the engine control routes (/sleep, /wake_up, /pause, ...; "
                  "VLLM_SERVER_DEV_MODE=1) wait for every engine's answer")
      ->capture_default_str();
  cmd->add_option("--engine-wire", a->engine_wire,
                  "Wire generation of the engines: auto (recognised from the handshake and "
                  "first messages), a generation (g20260712-370b678a, or g20260712) or a vLLM "
                  "release")
      ->capture_default_str();
  cmd->add_option("--speculative-config", a->speculative_config,
                  "vLLM's speculative config JSON (num_speculative_tokens)");
  cmd->add_flag("--diffusion-model", a->diffusion_model,
                "The model is a diffusion LLM (vLLM: its HF config has canvas_length): the "
                "vllm:diffusion_* counters replace the spec-decode families");
  cmd->add_flag("--kv-cache-metrics", a->kv_cache_metrics,
                "Register KV block residency histograms");
  cmd->add_option("--custom-histogram-buckets", a->custom_histogram_buckets,
                  "JSON object: bucket-family key (request_latency, time_to_first_token, "
                  "inter_token_latency, iteration_tokens, request_params_n, "
                  "request_num_preemptions, request_tokens, kv_cache_residency) -> upper bounds "
                  "replacing its default buckets");
  cmd->add_option("--show-hidden-metrics-for-version", a->show_hidden_metrics_for_version,
                  "Show metrics hidden since this version (vLLM's escape hatch for deprecated "
                  "metrics, e.g. 0.31)");
  cmd->add_option("--max-model-len", a->max_model_len,
                  "Override the engines' max_model_len for the token buckets")
      ->check(DecimalInRange(1, INT64_MAX));
  cmd->add_option("--cache-config-info", a->cache_config_info,
                  "JSON object of CacheConfig labels for vllm:cache_config_info");
  cmd->add_flag("--disable-created-series", a->disable_created_series, "Omit _created samples");
  cmd->add_option("--max-label-values-per-family", a->max_label_values_per_family,
                  "Children a family may grow from label values engines send (Mooncake store "
                  "operation/status, connector names); past it samples are dropped and counted "
                  "in vmetrics_label_values_dropped_total. 0 = no limit")
      ->capture_default_str();
  cmd->add_option("--max-label-value-bytes", a->max_label_value_bytes,
                  "Longest label value accepted from engines; longer ones are dropped and "
                  "counted in vmetrics_wire_values_skipped_total")
      ->capture_default_str()
      ->check(DecimalInRange(1, kMaxLabelValueBytesLimit));
  cmd->add_flag("--enable-lora", a->enable_lora,
                "LoRA is enabled: register vllm:lora_requests_info (also on when the engines "
                "report LoRA support)");
  cmd->add_option("--max-loras", a->max_loras,
                  "Max LoRA adapters per batch (the max_lora label; vLLM's default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--lora-modules", f->lora_modules,
                  "LoRA adapters a request's `model` may name: name=path or "
                  "'{\"name\":...,\"path\":...}' (requires --enable-lora)");
  cmd->add_option("--eos-token-id", a->eos_token_id,
                  "The model's EOS token id, sent in every request as vLLM's frontend sends the "
                  "tokenizer's (engines stop there unless ignore_eos); -1 = none")
      ->check(CLI::Range(int64_t{-1}, int64_t{INT32_MAX}));
  cmd->add_option("--generation-config", a->generation_config,
                  "A model directory: generation_config.json (EOS ids, sampling defaults, "
                  "max_new_tokens) and config.json (vocab_size, eos_token_id), as vLLM reads them");
  cmd->add_option("--max-logprobs", a->max_logprobs,
                  "Most logprobs and prompt_logprobs a request may ask for (-1 = no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  cmd->add_flag("--enable-prompt-tokens-details", a->enable_prompt_tokens_details,
                "usage.prompt_tokens_details.cached_tokens in answers");
  cmd->add_flag("--enable-per-request-metrics", a->enable_per_request_metrics,
                "Completions carry vLLM's per-request `metrics` object (timings of the request)");
  cmd->add_flag("--enable-force-include-usage", a->enable_force_include_usage,
                "Completion streams report usage on every chunk and before [DONE], as if "
                "stream_options asked for it");
  cmd->add_option("--per-request-spec-decode-metrics", a->per_request_spec_decode_metrics,
                  "Single-choice answers carry metrics.speculative_decoding (summary; detailed "
                  "adds the per-step lists); needs --speculative-config")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "summary", "detailed"}));
  cmd->add_flag("--enable-server-load-tracking", a->enable_server_load_tracking,
                "GET /load counts the token API requests in flight (else it answers 0)");
  cmd->add_option("--api-key", a->http.api_keys,
                  "vLLM's --api-key: requests to /v1, /v2, /inference, /cohere and "
                  "/abort_requests need `Authorization: Bearer <key>` (one of these keys; "
                  "default: VLLM_API_KEY)");
  cmd->add_option("--host", a->http.host, "HTTP bind address (loopback by default)");
  cmd->add_option("--port", f->port, "HTTP port (0 = ephemeral)")->check(CLI::Range(0, 65535));
  cmd->add_option("--http-threads", a->http.threads, "HTTP worker threads")
      ->check(CLI::Range(1u, 64u));
  // What one client may cost (HttpServerOptions; docs/operator-guide.md, "Hostile clients").
  cmd->add_option("--http-max-connections", a->http.max_connections,
                  "Connections open at once; past it a new one takes the place of the one "
                  "waiting longest for a request (at least --http-threads)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--http-max-connections-per-address", a->http.max_connections_per_address,
                  "Connections open at once from one client address; past it a new one takes the "
                  "place of that address's connection waiting longest. 0 = no limit")
      ->check(CLI::Range(size_t{0}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--http-scrape-reserve", a->http.scrape_reserve_connections,
                  "Connections beyond --http-max-connections kept for /metrics and /health when "
                  "every other connection is busy. 0 = none")
      ->check(CLI::Range(size_t{0}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--http-request-timeout", a->http.request_timeout_s,
                  "Seconds to send a whole request (from its first byte) and to read a whole "
                  "reply; sending or reading a byte at a time cannot stretch it. 0 = none")
      ->check(CLI::Range(0u, 86400u))
      ->capture_default_str();
  cmd->add_option("--http-idle-timeout", a->http.connection_timeout_s,
                  "Seconds a connection may stay idle (keep-alive included). 0 = never closed")
      ->check(CLI::Range(0u, 86400u))
      ->capture_default_str();
  cmd->add_option("--http-max-rendered-bodies", a->http.max_rendered_bodies,
                  "/metrics bodies held at once per format and encoding; past it a scrape shares "
                  "the newest held body instead of rendering")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--http-max-stream-unsent-bytes", a->http.max_stream_unsent_bytes,
                  "Bytes a stream may hold written and not yet sent to its client; past it the "
                  "stream ends as if the client had left (aborted at its engine)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--http-stream-write-timeout", a->http.stream_write_timeout_s,
                  "Seconds a stream's client may take no bytes while some wait for it; past it "
                  "the stream ends as if the client had left. 0 = none")
      ->check(CLI::Range(0u, 86400u))
      ->capture_default_str();
  cmd->add_option("--http-error-log-interval", a->http.error_log_interval_s,
                  "Seconds during which further HTTP errors of one kind are counted, not logged; "
                  "the count is logged after. 0 = log every one")
      ->check(CLI::Range(0u, 86400u))
      ->capture_default_str();
  cmd->add_option("--web-config-file", a->web_config_file,
                  "Prometheus exporter-toolkit web config (TLS, basic auth)");
  cmd->add_option("--log-format", f->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", f->log_level, "Lowest level logged: debug, info, warning, error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
}

int RunServe(const ServeFlags& flags) {
  FrontendOptions options = flags.options;
  options.http.port = static_cast<uint16_t>(flags.port);
  if (options.http.max_connections < options.http.threads) {
    frontend::LogError("--http-max-connections (" + std::to_string(options.http.max_connections) +
                       ") must be at least --http-threads (" +
                       std::to_string(options.http.threads) + ")");
    return 2;
  }
  (void)frontend::ParseLogFormat(flags.log_format, &options.log_format);  // checked by CLI11
  frontend::SetLogFormat(options.log_format);
  frontend::LogLevel level = frontend::LogLevel::kInfo;
  (void)frontend::ParseLogLevel(flags.log_level, &level);  // checked by CLI11
  frontend::SetLogLevel(level);
  Result<std::vector<LoraModule>> lora = ParseLoraModules(flags.lora_modules);
  if (!lora.ok()) {
    frontend::LogError(lora.status().message());
    return 2;
  }
  options.lora_modules = std::move(*lora);
  // As vLLM: --api-key takes precedence over VLLM_API_KEY; empty keys count as none.
  if (options.http.api_keys.empty()) {
    if (const char* key = std::getenv("VLLM_API_KEY"); key != nullptr) {
      options.http.api_keys.emplace_back(key);
    }
  }
  std::erase(options.http.api_keys, std::string());
  // 2: the options are unusable (the message names the flag); 1: the engines or a socket
  // failed.
  if (Status s = frontend::Serve(options); !s.ok()) {
    frontend::LogError(s.message());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Meet vLLM engines over ZeroMQ, record their statistics, serve /metrics");
  cmd->footer(
      "Examples:\n"
      "  # next to `vllm serve M --headless --data-parallel-address 10.0.0.5 "
      "--data-parallel-rpc-port 29550`:\n"
      "  vmetrics serve --data-parallel-address 10.0.0.5 --data-parallel-rpc-port 29550 "
      "--served-model-name M --host 0.0.0.0 --port 8000\n"
      "  # addresses fixed by a supervisor:\n"
      "  vmetrics serve --input-address tcp://127.0.0.1:5555 --output-address "
      "tcp://127.0.0.1:5556 --engine-start-index 0 --engine-count 2");
  AddFrontendFlags(cmd, flags.get());
  cmd->callback([flags, exit_code] { *exit_code = RunServe(*flags); });
}

}  // namespace vmetrics::cli
