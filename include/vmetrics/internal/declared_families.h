// HELP strings and buckets are Python's, byte for byte
// (../shared/spec/reference/python-frontend-metrics.md §2.3-§2.4).
#include "metrics/frontend_families.h"

namespace vmetrics::internal {
namespace {

using T = MetricType;

const std::vector<FrontendFamily>& SpecTable() {
  static const std::vector<FrontendFamily> t = {
      {"vllm:spec_decode_num_drafts", T::kCounter, "Number of spec decoding drafts.",
       "add `spec_decoding_stats.num_drafts`",
       Gate::kSpecDecode},
      {"vllm:spec_decode_num_draft_tokens", T::kCounter, "Number of draft tokens.",
       "add `spec_decoding_stats.num_draft_tokens`",
       Gate::kSpecDecode},
      {"vllm:spec_decode_num_accepted_tokens", T::kCounter, "Number of accepted tokens.",
       "add `spec_decoding_stats.num_accepted_tokens`",
       Gate::kSpecDecode},
      // Children of the per-position family are created by the recorder (engine outer,
      // positions inner), so the table lists no extra values.
      {"vllm:spec_decode_num_accepted_tokens_per_pos", T::kCounter,
       "Accepted tokens per draft position.",
       "add `spec_decoding_stats.num_accepted_tokens_per_pos[position]`", Gate::kSpecDecode,
       BucketSet::kNone, "position"},
  };
  return t;
}

const std::vector<FrontendFamily>& Table() {
  static const std::vector<FrontendFamily> t = {
      {"vllm:estimated_flops_per_gpu", T::kCounter,
       "Estimated number of floating point operations per GPU (for Model Flops Utilization "
       "calculations).",
       "add `perf_stats.num_flops_per_gpu` (skipped when all three perf counts are 0)"},
      {"vllm:estimated_read_bytes_per_gpu", T::kCounter,
       "Estimated number of bytes read from memory per GPU (for Model Flops Utilization "
       "calculations).",
       "add `perf_stats.num_read_bytes_per_gpu`"},
      {"vllm:estimated_write_bytes_per_gpu", T::kCounter,
       "Estimated number of bytes written to memory per GPU (for Model Flops Utilization "
       "calculations).",
       "add `perf_stats.num_write_bytes_per_gpu`"},
      {"vllm:num_requests_running", T::kGauge, "Number of requests in model execution batches.",
       "set to `num_running_reqs`"},
      {"vllm:num_requests_waiting", T::kGauge, "Number of requests waiting to be processed.",
       "set to `num_waiting_reqs + num_skipped_waiting_reqs`"},
      {"vllm:num_requests_waiting_by_reason", T::kGauge,
       "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling "
       "capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, "
       "blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
       "capacity: set to `num_waiting_reqs`; deferred: set to `num_skipped_waiting_reqs`",
       Gate::kAlways, BucketSet::kNone, "reason", {"capacity", "deferred"}},
      {"vllm:engine_sleep_state", T::kGauge,
       "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
       "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
       "`awake` = 1 at registration; the frontend's sleep and wake calls",
       Gate::kAlways, BucketSet::kNone, "sleep_state", {"awake", "weights_offloaded", "discard_all"}},
      {"vllm:kv_cache_usage_perc", T::kGauge, "KV-cache usage. 1 means 100 percent usage.",
       "set to `kv_cache_usage`"},
      {"vllm:prefix_cache_queries", T::kCounter,
       "Prefix cache queries, in terms of number of queried tokens.",
       "add `prefix_cache_stats.queries`"},
      {"vllm:prefix_cache_hits", T::kCounter,
       "Prefix cache hits, in terms of number of cached tokens.",
       "add `prefix_cache_stats.hits`"},
      {"vllm:external_prefix_cache_queries", T::kCounter,
       "External prefix cache queries from KV connector cross-instance cache sharing, in terms "
       "of number of queried tokens.",
       "add `connector_prefix_cache_stats.queries` (when present)"},
      {"vllm:external_prefix_cache_hits", T::kCounter,
       "External prefix cache hits from KV connector cross-instance cache sharing, in terms of "
       "number of cached tokens.",
       "add `connector_prefix_cache_stats.hits` (when present)"},
      {"vllm:mm_cache_queries", T::kCounter,
       "Multi-modal cache queries, in terms of number of queried items.",
       "the frontend's multi-modal processor cache (not on the wire)"},
      {"vllm:mm_cache_hits", T::kCounter,
       "Multi-modal cache hits, in terms of number of cached items.",
       "the frontend's multi-modal processor cache (not on the wire)"},
      {"vllm:num_preemptions", T::kCounter, "Cumulative number of preemption from the engine.",
       "add the PREEMPTED events of the request outputs"},
      {"vllm:prompt_tokens", T::kCounter, "Number of prefill tokens processed.",
       "add the prompt tokens of each request's first output (`prefill_stats`)"},
      {"vllm:prompt_tokens_by_source", T::kCounter, "Number of prompt tokens by source.",
       "add `prefill_stats`: computed, local cache hit, external KV transfer tokens",
       Gate::kAlways, BucketSet::kNone, "source",
       {"local_compute", "local_cache_hit", "external_kv_transfer"}},
      {"vllm:prompt_tokens_cached", T::kCounter,
       "Number of cached prompt tokens (local + external).",
       "add `prefill_stats` cached tokens (local + external)"},
      {"vllm:generation_tokens", T::kCounter, "Number of generation tokens processed.",
       "add the `new_token_ids` of the request outputs"},
      {"vllm:request_success", T::kCounter, "Count of successfully processed requests.",
       "+1 per finished request, by `finish_reason`",
       Gate::kAlways, BucketSet::kNone, "finished_reason",
       {"stop", "length", "abort", "error", "repetition"}},
      {"vllm:request_prompt_tokens", T::kHistogram, "Number of prefill tokens processed.",
       "finished request: its prompt tokens",
       Gate::kAlways, BucketSet::kTokens125},
      {"vllm:request_generation_tokens", T::kHistogram, "Number of generation tokens processed.",
       "finished request: its generation tokens",
       Gate::kAlways, BucketSet::kTokens125},
      {"vllm:iteration_tokens_total", T::kHistogram,
       "Histogram of number of tokens per engine_step.",
       "per message with outputs: prompt tokens computed + generation tokens", Gate::kAlways,
       BucketSet::kIterationTokens},
      {"vllm:request_max_num_generation_tokens", T::kHistogram,
       "Histogram of maximum number of requested generation tokens.",
       "finished request: the most generation tokens among its sequences", Gate::kAlways,
       BucketSet::kTokens125},
      {"vllm:request_params_n", T::kHistogram, "Histogram of the n request parameter.",
       "finished request: its `n` parameter",
       Gate::kAlways, BucketSet::kRequestParamsN},
      {"vllm:request_params_max_tokens", T::kHistogram,
       "Histogram of the max_tokens request parameter.",
       "finished request: its `max_tokens` parameter", Gate::kAlways, BucketSet::kTokens125},
      {"vllm:time_to_first_token_seconds", T::kHistogram,
       "Histogram of time to first token in seconds.",
       "first output of a request: time since arrival", Gate::kAlways,
       BucketSet::kTimeToFirstToken},
      {"vllm:inter_token_latency_seconds", T::kHistogram,
       "Histogram of inter-token latency in seconds.",
       "each later output: time since the previous one", Gate::kAlways,
       BucketSet::kInterTokenLatency},
      {"vllm:request_time_per_output_token_seconds", T::kHistogram,
       "Histogram of time_per_output_token_seconds per request.",
       "finished request: mean time per output token", Gate::kAlways,
       BucketSet::kInterTokenLatency},
      {"vllm:e2e_request_latency_seconds", T::kHistogram,
       "Histogram of e2e request latency in seconds.",
       "finished request: time from arrival to finish", Gate::kAlways, BucketSet::kRequestLatency},
      {"vllm:request_queue_time_seconds", T::kHistogram,
       "Histogram of time spent in WAITING phase for request.",
       "finished request: QUEUED to first SCHEDULED event", Gate::kAlways,
       BucketSet::kRequestLatency},
      {"vllm:request_inference_time_seconds", T::kHistogram,
       "Histogram of time spent in RUNNING phase for request.",
       "finished request: first SCHEDULED event to last token", Gate::kAlways,
       BucketSet::kRequestLatency},
      {"vllm:request_prefill_time_seconds", T::kHistogram,
       "Histogram of time spent in PREFILL phase for request.",
       "finished request: first SCHEDULED event to first token", Gate::kAlways,
       BucketSet::kRequestLatency},
      {"vllm:request_decode_time_seconds", T::kHistogram,
       "Histogram of time spent in DECODE phase for request.",
       "finished request: first token to last token", Gate::kAlways,
       BucketSet::kRequestLatency},
      {"vllm:request_prefill_kv_computed_tokens", T::kHistogram,
       "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
       "finished request: prompt tokens minus cached tokens",
       Gate::kAlways, BucketSet::kTokens125},
      {"vllm:kv_block_lifetime_seconds", T::kHistogram,
       "Histogram of KV cache block lifetime from allocation to eviction. Sampled metrics "
       "(controlled by --kv-cache-metrics-sample).",
       "observe each `kv_cache_eviction_events[].lifetime_seconds`",
       Gate::kKvCacheMetrics, BucketSet::kKvResidency},
      {"vllm:kv_block_idle_before_evict_seconds", T::kHistogram,
       "Histogram of idle time before KV cache block eviction. Sampled metrics (controlled by "
       "--kv-cache-metrics-sample).",
       "observe each `kv_cache_eviction_events[].idle_seconds`",
       Gate::kKvCacheMetrics, BucketSet::kKvResidency},
      {"vllm:kv_block_reuse_gap_seconds", T::kHistogram,
       "Histogram of time gaps between consecutive KV cache block accesses. Only the most recent "
       "accesses are recorded (ring buffer). Sampled metrics (controlled by "
       "--kv-cache-metrics-sample).",
       "observe every element of `kv_cache_eviction_events[].reuse_gaps_seconds`",
       Gate::kKvCacheMetrics, BucketSet::kKvResidency},
  };
  return t;
}

}  // namespace

std::span<const FrontendFamily> SpecDecodeFamilies() { return SpecTable(); }
std::span<const FrontendFamily> FrontendFamilies() { return Table(); }

}  // namespace vmetrics::internal
