// SPDX-License-Identifier: Apache-2.0
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

// PrefillStatsOfOlderEngine
//
// Engines up to g20260413 (wire_generation.h) send no PrefillStats: every output carries
// num_cached_tokens (and, in g20260413, num_external_computed_tokens), and the frontend knows
// the prompt length from its own request. This is the PrefillStats a newer engine sends on the
// request's first output for the same prefill (vllm/v1/metrics/stats.py PrefillStats.set at
// vllm-project/vllm 6adad087: cached = local + external, computed = prompt - cached), so the
// newest frontend's families are fed the same way whatever the engine's generation
// (docs/recording.md, "Wire generations"). Before g20260413 the engine does not tell external
// tokens apart: all cached tokens count as local. Values are clamped to 0 <= external <= cached
// <= prompt, which the engine's own PrefillStats guarantees.
//
// Example:
//   PrefillStats p = PrefillStatsOfOlderEngine(981, 351, 63);
//   EXPECT_EQ(p.num_computed_tokens, 630);
//   EXPECT_EQ(p.num_local_cached_tokens, 288);
inline PrefillStats PrefillStatsOfOlderEngine(int64_t prompt_len, int64_t num_cached_tokens,
                                              int64_t num_external_computed_tokens) {
  const int64_t prompt = prompt_len < 0 ? 0 : prompt_len;
  const int64_t cached =
      num_cached_tokens < 0 ? 0 : (num_cached_tokens > prompt ? prompt : num_cached_tokens);
  const int64_t external = num_external_computed_tokens < 0        ? 0
                           : num_external_computed_tokens > cached ? cached
                                                                   : num_external_computed_tokens;
  PrefillStats p;
  p.num_prompt_tokens = prompt;
  p.num_cached_tokens = cached;
  p.num_computed_tokens = prompt - cached;
  p.num_local_cached_tokens = cached - external;
  p.num_external_cached_tokens = external;
  return p;
}

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
  int64_t num_preemptions = 0;  // the request's PREEMPTED events
  // The RequestStateStats timestamps the times above come from (engine monotonic seconds; 0 =
  // never set), kept for the per-request `metrics` object of the token APIs
  // (--enable-per-request-metrics), which guards each time on its timestamps being set.
  double queued_ts = 0;
  double scheduled_ts = 0;
  double first_token_ts = 0;
  double last_token_ts = 0;
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
