// SPDX-License-Identifier: Apache-2.0
// File: recorder.h
//
// StatsRecorder: registers the families vLLM's Python frontend registers (plus the families of
// the configured KV connectors and vmetrics' own accounting) and records decoded
// EngineCoreOutputs messages into them. docs/recording.md is the contract: family order, eager
// children, and exactly how each SchedulerStats field and connector payload is applied.
//
// Hot path: per-engine children are resolved at construction (like vLLM's
// resolve_scheduler_stats_handles), so recording a SchedulerStats is a series of atomic adds
// and stores. Dynamically labelled families (Mooncake store operation/status, connectors seen
// for the first time) look their children up under the family mutex: the documented exception.
//
// Thread safety: Record and the Count* methods may be called from several threads at once
// (each child is atomic); rendering the registry concurrently is safe.
//
// Example:
//   Registry reg(&clock);
//   StatsRecorder rec(&reg, RecorderOptions{});
//   rec.Record(message);  // a decoded EngineCoreOutputs
//   std::string text;
//   WriteText(reg, {}, &text);
#ifndef VMETRICS_RECORDER_H_
#define VMETRICS_RECORDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/connector_catalog.h"
#include "vmetrics/connector_identification.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/iteration_stats.h"
#include "vmetrics/registry.h"

namespace vmetrics {

// --custom-histogram-buckets: bucket-family key -> the upper bounds that replace its default
// buckets (vLLM's ObservabilityConfig.custom_histogram_buckets).
using CustomHistogramBuckets = std::vector<std::pair<std::string, std::vector<double>>>;

// The bucket-family keys of vLLM's BUCKET_FAMILY_KEYS (vllm/v1/metrics/buckets.py at
// vllm-project/vllm 139b1c3f) that vmetrics' histograms use: request_latency,
// time_to_first_token, inter_token_latency, iteration_tokens, request_params_n,
// request_num_preemptions, request_tokens, kv_cache_residency. docs/recording.md lists the
// families of each; the connector histograms keep their own buckets.
std::span<const std::string_view> HistogramBucketFamilyKeys();

struct RecorderOptions {
  // Behaviour.
  std::string served_model_name = "model";    // `model_name` label
  std::vector<int64_t> engine_indexes = {0};  // data-parallel ranks served (eager children)
  ConnectorConfig connectors;                 // --kv-transfer-config (or the ready response)
  // --ec-transfer-config: the EC connector whose families (internal/ec_connector_rows.h) are
  // registered after the KV connectors' and fed from ec_connector_stats.
  EcConnectorConfig ec_connector;
  int64_t max_model_len = 8192;        // 1-2-5 token buckets
  int64_t num_speculative_tokens = 0;  // > 0 registers the spec-decode families
  // The model is a diffusion LLM (vLLM's ModelConfig.is_diffusion: its HF config has a
  // canvas_length, which a frontend without the model cannot see: --diffusion-model). Registers
  // the vllm:diffusion_* counters instead of the spec-decode families, fed from
  // spec_decoding_stats.
  bool diffusion_model = false;
  bool kv_cache_metrics = false;  // registers the kv_block_* residency histograms
  // vLLM's envs.VLLM_COMPUTE_NANS_IN_LOGITS (the frontend reads it from its own environment:
  // frontend/environment.h): registers vllm:corrupted_requests. The request tracker counts the
  // corrupted requests only with the same switch (RequestTracker::Options).
  bool compute_nans_in_logits = false;
  // Replacement buckets by bucket-family key (HistogramBucketFamilyKeys(); validated by the
  // caller: increasing, finite, > 0). Families whose key is not listed keep their defaults.
  CustomHistogramBuckets custom_histogram_buckets;
  // vLLM's ObservabilityConfig.show_hidden_metrics (--show-hidden-metrics-for-version): shows
  // families deprecated in the previous minor release. No family vmetrics registers is hidden
  // at present, so it changes nothing yet; it is kept so that one can be.
  bool show_hidden_metrics = false;
  // LoRA enabled (vLLM's --enable-lora) with this many adapters per batch (--max-loras): > 0
  // registers vllm:lora_requests_info, whose `max_lora` label is this number. 0 = disabled.
  int64_t max_loras = 0;
  // vllm:cache_config_info labels (CacheConfig key -> str(value)); empty = no children yet.
  std::vector<std::pair<std::string, std::string>> cache_config;
  // Where "logged once" messages go (unknown connectors, bad fields); nullptr = stderr.
  std::function<void(const std::string&)> log;
  // Catalog of connector rows; nullptr = ConnectorCatalog::BuiltIn(). The recorder keeps a
  // copy; rows that `_metrics_descriptor` registers at run time go into the copy only.
  const ConnectorCatalog* catalog = nullptr;
  // Registers vmetrics_engine_up{engine} (1 while the engine is connected, 0 once it died);
  // `serve` sets it, `replay` has no engines to watch.
  bool track_engine_liveness = false;
  // Registers vmetrics_engine_wire_info{engine,generation,requests} (SetEngineWire); `serve`
  // sets it.
  // `replay` and `decode` print the recognition instead.
  bool report_engine_wire = false;
  // Cardinality guard: at most this many children per family may be created from label
  // values that engines send (Mooncake store operation/status, a descriptor's labelnames,
  // connector class names). Past it a sample with a new label value is dropped and counted in
  // vmetrics_label_values_dropped_total{family}, logged once per family. 0 = no limit.
  size_t max_label_values_per_family = 1000;
  // Label values from engines longer than this many bytes are refused like values past the
  // limit above (the sample dropped, counted in vmetrics_wire_values_skipped_total
  // {reason="label_value_too_long"}, logged once per family), so an exposition stays bounded
  // by families x max_label_values_per_family x this. 0 = no limit.
  size_t max_label_value_bytes = 1024;
};

class StatsRecorder {
 public:
  StatsRecorder(Registry* registry, RecorderOptions options);
  ~StatsRecorder();
  StatsRecorder(const StatsRecorder&) = delete;
  StatsRecorder& operator=(const StatsRecorder&) = delete;

  // The context to decode messages with (configured connectors, reporter).
  DecodeContext decode_context(uint64_t message_number) const;

  // Records one decoded message (docs/recording.md). The parts decoding skipped
  // (message.skipped) are counted in vmetrics_decode_errors_total{part} first. A message from
  // an engine index not in options.engine_indexes is counted in
  // vmetrics_unknown_engine_messages_total and skipped.
  // With LoRA enabled, vllm:lora_requests_info takes its adapter names from the message's
  // SchedulerStats: a frontend fills them in first (RequestTracker::UpdateSchedulerStats), as
  // Python's output handler does before it records.
  void Record(const EngineCoreOutputs& message);

  // RecordIteration
  //
  // Records one IterationStats of engine `engine_index` into the request and iteration
  // families, in the order of docs/recording.md, "Recording one IterationStats" (C.1-C.9):
  // preemptions, prompt tokens (total, by source, cached), generation tokens, one
  // vllm:iteration_tokens_total observation (computed + generation, even if 0), the per-iteration
  // lists, then per finished request request_success{finished_reason} and its histograms
  // (max_tokens only if truthy). Call it after Record() of the same message (Python records
  // SchedulerStats first). An engine index that is not configured records nothing (Record() already
  // counted it).
  //
  // Example:
  //   IterationStats it;
  //   it.num_generation_tokens = 3;
  //   rec.RecordIteration(it, 0);  // generation_tokens_total{engine="0"} 3.0
  void RecordIteration(const IterationStats& iteration, int64_t engine_index);

  // ResolveConnectors
  //
  // The payloads of `stats` as Record resolves them (connector_identification.h): each
  // identified with this recorder's catalog and given its row and outcome; a
  // `_metrics_descriptor` is adopted now (its families registered, conflicts refused), as
  // Record would. `vmetrics decode` shows with it what recording does with each payload.
  IdentifiedPayloads ResolveConnectors(const KvConnectorStats& stats, const DecodeContext& ctx);

  // Counts a message that failed to decode as a whole (vmetrics_decode_errors_total
  // {part="message"}).
  void CountDecodeError();

  // SetEngineWire
  //
  // vmetrics_engine_wire_info{engine, generation, requests} = 1 (requires
  // options.report_engine_wire; `generation` is the wire generation its messages are decoded
  // with, or "unknown"; `requests` the layout its requests are encoded with, or "refused ...").
  // What the engine was taken for before is set to 0: the series stays, so a change shows in
  // its history.
  //
  // Example:
  //   rec.SetEngineWire(0, "g20260814-6adad087", "g20260814-6adad087");
  void SetEngineWire(int64_t engine_index, std::string_view generation, std::string_view requests);

  // Sets vllm:cache_config_info's children (one per engine, value 1.0). Only the first call
  // has an effect (Python registers it once, after the handshake).
  void SetCacheConfig(const std::vector<std::pair<std::string, std::string>>& cache_config);

  // vmetrics_engine_up{engine} = up ? 1 : 0 (requires options.track_engine_liveness).
  void SetEngineUp(int64_t engine_index, bool up);

  // Sets the request gauges of `engine_index` (vllm:num_requests_running, _waiting,
  // _waiting_by_reason, _kv_fetch_by_stage) to 0: called when the engine died and its requests
  // were failed, so that nothing counts requests no engine holds. The engine's next
  // SchedulerStats sets them again. Other engines' children are untouched.
  //
  // Example:
  //   rec.ClearEngineRequests(1);  // engine 1's process exited
  void ClearEngineRequests(int64_t engine_index);

  // Sets vllm:engine_sleep_state of `engine_index` as PrometheusStatLogger.record_sleep_state
  // does (vllm/v1/metrics/loggers.py at 6adad087): asleep -> awake 0, weights_offloaded 1 at
  // level 1, discard_all 1 at level 2 (neither at another level); awake -> awake 1, the others
  // 0. Called once an engine answered a sleep or wake-up call.
  //
  // Example:
  //   rec.SetEngineSleepState(0, /*asleep=*/true, /*level=*/1);
  void SetEngineSleepState(int64_t engine_index, bool asleep, int64_t level);

  Reporter& reporter();
  const RecorderOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vmetrics

#endif  // VMETRICS_RECORDER_H_
