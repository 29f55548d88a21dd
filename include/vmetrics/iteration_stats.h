// File: iteration_stats.h
//
// The per-iteration statistics vLLM's Python frontend computes from one EngineCoreOutputs
// message (vllm/v1/metrics/stats.py: IterationStats, PromptTokenStats, FinishedRequestStats),
// as plain values. RequestTracker (requests.h) produces them; StatsRecorder::RecordIteration
// (recorder.h) records them. Kept apart from requests.h so the metrics library needs only
// these types, not the tracker.
//
// Thread safety: plain values.
//
// Example:
//   IterationStats it;
//   it.num_generation_tokens = 1;
//   it.time_to_first_tokens_iter.push_back(0.25);
//   recorder.RecordIteration(it, /*engine_index=*/0);
#ifndef VMETRICS_ITERATION_STATS_H_
#define VMETRICS_ITERATION_STATS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {

// PromptTokenStats (vllm/v1/metrics/stats.py). Sources order (the `source` label of
// vllm:prompt_tokens_by_source): local_compute (= computed), local_cache_hit,
// external_kv_transfer.
struct PromptTokenStats {
  int64_t computed = 0;
  int64_t local_cache_hit = 0;
  int64_t external_kv_transfer = 0;
  int64_t cached_tokens = 0;
  int64_t total = 0;

  // update_from_output(prefill_stats).
  void UpdateFromOutput(const PrefillStats& prefill) {
    computed += prefill.num_computed_tokens;
    cached_tokens += prefill.num_cached_tokens;
    total += prefill.num_prompt_tokens;
    local_cache_hit += prefill.num_local_cached_tokens;
    external_kv_transfer += prefill.num_external_cached_tokens;
  }
};

// FinishedRequestStats, field order as in Python.
struct FinishedRequestStats {
  FinishReason finish_reason = FinishReason::kStop;
  std::string request_id;
  double e2e_latency = 0;
  int64_t num_prompt_tokens = 0;
  int64_t num_generation_tokens = 0;
  std::optional<int64_t> max_tokens_param;  // nullopt = None (pooling requests)
  double queued_time = 0;
  double prefill_time = 0;
  double inference_time = 0;
  double decode_time = 0;
  double mean_time_per_output_token = 0;
  bool is_corrupted = false;
  int64_t num_cached_tokens = 0;
};

// IterationStats: one per EngineCoreOutputs message with at least one output.
struct IterationStats {
  double iteration_timestamp = 0;  // frontend wall clock
  int64_t num_generation_tokens = 0;
  PromptTokenStats prompt_token_stats;
  int64_t num_preempted_reqs = 0;
  std::vector<FinishedRequestStats> finished_requests;
  std::vector<int64_t> max_num_generation_tokens_iter;
  std::vector<int64_t> n_params_iter;
  std::vector<double> time_to_first_tokens_iter;
  std::vector<double> inter_token_latencies_iter;
  int64_t num_corrupted_reqs = 0;
};

}  // namespace vmetrics

#endif  // VMETRICS_ITERATION_STATS_H_
