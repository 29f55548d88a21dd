// SPDX-License-Identifier: Apache-2.0
// vmetrics replay FILE: the flags of frontend::Replay (offline/replay.h); the exposition goes
// to stdout. Exit 0, or 1 when a message did not decode, or 2 for options that cannot be used.
#include "vmetrics/offline/replay.h"

#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics::cli {
namespace {

struct ReplayFlags {
  frontend::ReplayOptions options;
  std::string format = "text";
};

int RunReplay(const ReplayFlags& flags) {
  frontend::ReplayOptions options = flags.options;
  options.format =
      flags.format == "openmetrics" ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kText;
  options.log = [](std::string_view line) {
    const std::string escaped = internal::EscapeForLog(line);
    std::fprintf(stderr, "vmetrics replay: %s\n", escaped.c_str());
  };
  Result<frontend::ReplayOutput> out = frontend::Replay(options);
  if (!out.ok()) {
    std::fprintf(stderr, "vmetrics replay: %s\n",
                 internal::EscapeForLog(out.status().message()).c_str());
    return 2;
  }
  std::fwrite(out->exposition.data(), 1, out->exposition.size(), stdout);
  return out->failed_messages > 0 ? 1 : 0;
}

}  // namespace

void AddReplayCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ReplayFlags>();
  frontend::ReplayOptions& o = flags->options;
  CLI::App* cmd = app.add_subcommand(
      "replay", "Record a capture of EngineCoreOutputs messages and print the exposition");
  cmd->footer(
      "Examples:\n"
      "  vmetrics replay capture.msgpack\n"
      "  vmetrics replay - --kv-transfer-config '{\"kv_connector\":\"NixlConnector\"}' "
      "--data-parallel-size 2 < capture.msgpack");
  cmd->add_option("file", o.input, "Concatenated msgpack EngineCoreOutputs ('-' = stdin)")
      ->required();
  cmd->add_option("--served-model-name", o.served_model_name, "model_name label value");
  cmd->add_option("--data-parallel-size", o.data_parallel_size, "Engines 0..N-1 get eager children")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--kv-transfer-config", o.kv_transfer_config,
                  "vLLM's KVTransferConfig JSON (configured connector)");
  cmd->add_option("--ec-transfer-config", o.ec_transfer_config,
                  "vLLM's ECTransferConfig JSON (the EC connector whose families are recorded)");
  cmd->add_option("--max-model-len", o.max_model_len, "Max model length (1-2-5 token buckets)")
      ->check(DecimalInRange(1, uint64_t{1} << 40));
  cmd->add_option(
      "--speculative-config", o.speculative_config,
      "vLLM's speculative config JSON (num_speculative_tokens adds spec-decode families)");
  cmd->add_flag("--diffusion-model", o.diffusion_model,
                "The model is a diffusion LLM (vLLM: its HF config has canvas_length): the "
                "vllm:diffusion_* counters replace the spec-decode families");
  cmd->add_flag("--kv-cache-metrics", o.kv_cache_metrics,
                "Register the KV block residency histograms");
  cmd->add_option("--custom-histogram-buckets", o.custom_histogram_buckets,
                  "JSON object: bucket-family key (request_latency, time_to_first_token, "
                  "inter_token_latency, iteration_tokens, request_params_n, "
                  "request_num_preemptions, request_tokens, kv_cache_residency) -> upper bounds "
                  "replacing its default buckets");
  cmd->add_option("--show-hidden-metrics-for-version", o.show_hidden_metrics_for_version,
                  "Show metrics hidden since this version (vLLM's escape hatch for deprecated "
                  "metrics, e.g. 0.31); replay has no engines, so any version shows them");
  cmd->add_flag("--enable-lora", o.enable_lora,
                "LoRA is enabled: register vllm:lora_requests_info");
  cmd->add_option("--max-loras", o.max_loras,
                  "Max LoRA adapters per batch (the max_lora label; vLLM's default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--format", flags->format, "Exposition format")
      ->check(CLI::IsMember({"text", "openmetrics"}));
  cmd->add_flag("--disable-created-series", o.disable_created_series,
                "Omit _created samples (also PROMETHEUS_DISABLE_CREATED_SERIES=True)");
  cmd->add_option("--created-timestamp", o.created_timestamp,
                  "Pin every _created value to this Unix time (for reproducible output)");
  cmd->add_option("--engine-wire", o.engine_wire,
                  "Wire generation of the engines: auto (recognised from the messages), a "
                  "generation (g20260712-370b678a, or g20260712) or a vLLM release");
  cmd->add_option("--requests", o.requests,
                  "JSON-lines sidecar of the frontend side (requests, aborts, per-message clocks): "
                  "feeds the request and iteration families");
  cmd->callback([flags, exit_code] { *exit_code = RunReplay(*flags); });
}

}  // namespace vmetrics::cli
