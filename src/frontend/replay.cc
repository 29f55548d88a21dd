// vmetrics replay FILE: records a capture and prints the exposition (DESIGN.md §7).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/requests_sidecar.h"
#include "cli/stream.h"
#include "vmetrics/exposition.h"
#include "vmetrics/recorder.h"
#include "vmetrics/requests.h"

namespace vmetrics::cli {
namespace {

struct ReplayArgs {
  std::string input;
  std::string served_model_name = "model";
  int64_t data_parallel_size = 1;
  std::string kv_transfer_config;
  int64_t max_model_len = 8192;
  std::string speculative_config;
  bool kv_cache_metrics = false;
  bool enable_lora = false;
  int64_t max_loras = 1;
  std::string format = "text";
  bool disable_created_series = false;
  double created_timestamp = -1;
  std::string requests;  // --requests: the frontend-side sidecar (cli/requests_sidecar.h)
};

std::string ResolveBesideInput(const std::string& path, const std::string& input) {
  if (path.empty() || path[0] == '/' || std::filesystem::exists(path) || input == "-") return path;
  const std::filesystem::path beside = std::filesystem::path(input).parent_path() / path;
  return std::filesystem::exists(beside) ? beside.string() : path;
}

int RunReplay(const ReplayArgs& args) {
  RecorderOptions options;
  options.served_model_name = args.served_model_name;
  options.engine_indexes.clear();
  for (int64_t i = 0; i < args.data_parallel_size; ++i) options.engine_indexes.push_back(i);
  options.max_model_len = args.max_model_len;
  options.kv_cache_metrics = args.kv_cache_metrics;
  if (args.enable_lora) options.max_loras = args.max_loras;
  if (!args.kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(args.kv_transfer_config);
    if (!c.ok()) {
      std::fprintf(stderr, "vmetrics replay: %s\n", c.status().message().c_str());
      return 2;
    }
    options.connectors = *c;
  }
  if (!args.speculative_config.empty()) {
    auto doc = nlohmann::json::parse(args.speculative_config, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      std::fprintf(stderr, "vmetrics replay: --speculative-config must be a JSON object\n");
      return 2;
    }
    auto k = doc.find("num_speculative_tokens");
    if (k != doc.end() && k->is_number_integer()) options.num_speculative_tokens = k->get<int64_t>();
  }
  options.log = [](const std::string& line) { std::fprintf(stderr, "vmetrics: %s\n", line.c_str()); };

  std::unique_ptr<Clock> clock;
  if (args.created_timestamp >= 0) clock = std::make_unique<FixedClock>(args.created_timestamp);
  Registry registry(clock.get());
  StatsRecorder recorder(&registry, options);

  // --requests: feed outputs through a RequestTracker. A relative path that does not exist
  // is also tried next to the capture, so a capture and its sidecar travel together.
  std::optional<RequestSidecar> sidecar;
  double monotonic = 0;
  RequestTracker::Options tracker_options;
  tracker_options.monotonic = [&monotonic] { return monotonic; };
  RequestTracker tracker(tracker_options);
  if (!args.requests.empty()) {
    Result<RequestSidecar> loaded =
        RequestSidecar::Load(ResolveBesideInput(args.requests, args.input));
    if (!loaded.ok()) {
      std::fprintf(stderr, "vmetrics replay: %s\n", loaded.status().message().c_str());
      return 2;
    }
    sidecar = std::move(*loaded);
  }

  std::string data, error;
  if (!ReadInput(args.input, &data, &error)) {
    std::fprintf(stderr, "vmetrics replay: %s\n", error.c_str());
    return 2;
  }
  const uint64_t failed = DecodeStream(
      data, "vmetrics replay", [&](uint64_t n) { return recorder.decode_context(n); },
      [&](EngineCoreOutputs& m, uint64_t number, size_t, const DecodeContext&) {
        if (!sidecar) {
          recorder.Record(m);
          return;
        }
        // Python's output handler: the outputs first, then the LoRA adapters into the
        // SchedulerStats, then SchedulerStats and IterationStats are recorded.
        const RequestSidecar::Clocks clocks = sidecar->Advance(number, &tracker);
        monotonic = clocks.monotonic;
        std::optional<IterationStats> it = tracker.ProcessOutputs(m, clocks.iteration_timestamp);
        if (m.scheduler_stats) tracker.UpdateSchedulerStats(&*m.scheduler_stats);
        recorder.Record(m);
        if (it) recorder.RecordIteration(*it, m.engine_index);
      },
      [&] { recorder.CountDecodeError(); });
  if (sidecar) sidecar->Finish(&tracker);
  const int exit_code = failed > 0 ? 1 : 0;
  ExpositionOptions expo;
  expo.created_series = !(args.disable_created_series || CreatedDisabledByEnvironment());
  std::string out;
  if (args.format == "openmetrics") {
    WriteOpenMetrics(registry, expo, &out);
  } else {
    WriteText(registry, expo, &out);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return exit_code;
}

}  // namespace

void AddReplayCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Record a capture of EngineCoreOutputs messages and print the exposition");
  cmd->footer(
      "Examples:\n"
      "  vmetrics replay capture.msgpack\n"
      "  vmetrics replay - --kv-transfer-config '{\"kv_connector\":\"NixlConnector\"}' "
      "--data-parallel-size 2 < capture.msgpack");
  cmd->add_option("file", args->input, "Concatenated msgpack EngineCoreOutputs ('-' = stdin)")
      ->required();
  cmd->add_option("--served-model-name", args->served_model_name, "model_name label value");
  cmd->add_option("--data-parallel-size", args->data_parallel_size,
                  "Engines 0..N-1 get eager children")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--kv-transfer-config", args->kv_transfer_config,
                  "vLLM's KVTransferConfig JSON (configured connector)");
  cmd->add_option("--max-model-len", args->max_model_len, "Max model length (1-2-5 token buckets)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--speculative-config", args->speculative_config,
                  "vLLM's speculative config JSON (num_speculative_tokens adds spec-decode families)");
  cmd->add_flag("--kv-cache-metrics", args->kv_cache_metrics,
                "Register the KV block residency histograms");
  cmd->add_flag("--enable-lora", args->enable_lora,
                "LoRA is enabled: register vllm:lora_requests_info");
  cmd->add_option("--max-loras", args->max_loras,
                  "Max LoRA adapters per batch (the max_lora label; vLLM's default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--format", args->format, "Exposition format")
      ->check(CLI::IsMember({"text", "openmetrics"}));
  cmd->add_flag("--disable-created-series", args->disable_created_series,
                "Omit _created samples (also PROMETHEUS_DISABLE_CREATED_SERIES=True)");
  cmd->add_option("--created-timestamp", args->created_timestamp,
                  "Pin every _created value to this Unix time (for reproducible output)");
  cmd->add_option("--requests", args->requests,
                  "JSON-lines sidecar of the frontend side (requests, aborts, per-message clocks): "
                  "feeds the request and iteration families");
  cmd->callback([args, exit_code] { *exit_code = RunReplay(*args); });
}

}  // namespace vmetrics::cli
