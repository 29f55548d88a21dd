// SPDX-License-Identifier: Apache-2.0
// File: declared_families.h
//
// Every family vmetrics registers other than the connector rows' (connector_catalog.cc),
// declared once, in one table: name, type, HELP, label names and the label values created at
// registration, buckets, the option that registers it, render group, and the text the metrics
// reference (`vmetrics metrics-reference`, docs/metrics.md) gives as its source. Each `vllm:`
// and `vmetrics_` name and HELP string appears once, here. The recorder registers the families
// from this table and records through handles typed by it (src/metrics/family_handles.h): a
// family is named by its FamilyId, so a misspelt family does not compile, and neither does an
// Observe on a gauge.
//
// Table order is registration order, which is render order within a render group: the rows
// marked before_connector_rows, then the families of the configured connectors (connector
// catalog order), then the other rows. vLLM's Python frontend (PrometheusStatLogger,
// vllm/v1/metrics/loggers.py at vllm-project/vllm 6adad087) registers its families in this
// order; HELP strings and buckets are its own, byte for byte.
//
// Adding a family: add its FamilyId where it registers, and its row at the same place (a
// static_assert checks that the two orders agree); then record into it through its handle in
// recorder.cc, and regenerate docs/metrics.md. docs/contributing.md walks through it.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// the metrics library's table, read by the frontend's metrics reference too.
#ifndef VMETRICS_INTERNAL_DECLARED_FAMILIES_H_
#define VMETRICS_INTERNAL_DECLARED_FAMILIES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "vmetrics/metric_type.h"

namespace vmetrics::internal {

// One per row of kDeclaredFamilies, in the same order.
enum class FamilyId : uint8_t {
  // Speculative decoding: registered before the connector families.
  kSpecDecodeNumDrafts,
  kSpecDecodeNumDraftTokens,
  kSpecDecodeNumAcceptedTokens,
  kSpecDecodeNumAcceptedTokensPerPos,
  // Diffusion LLMs: the spec-decode counters under their own names, in their place.
  kDiffusionNumDenoisingSteps,
  kDiffusionNumCanvasPositions,
  kDiffusionNumCommittedTokens,
  // After the connector families.
  kEstimatedFlopsPerGpu,
  kEstimatedReadBytesPerGpu,
  kEstimatedWriteBytesPerGpu,
  kNumRequestsRunning,
  kNumRequestsWaiting,
  kNumRequestsWaitingByReason,
  kNumRequestsKvFetchByStage,
  kEngineSleepState,
  kKvCacheUsagePerc,
  kCorruptedRequests,
  kPrefixCacheQueries,
  kPrefixCacheHits,
  kExternalPrefixCacheQueries,
  kExternalPrefixCacheHits,
  kMmCacheQueries,
  kMmCacheHits,
  kNumPreemptions,
  kPromptTokens,
  kPromptTokensBySource,
  kPromptTokensCached,
  kPromptTokensCachedBySource,
  kGenerationTokens,
  kRequestSuccess,
  kRequestPromptTokens,
  kRequestGenerationTokens,
  kIterationTokensTotal,
  kRequestMaxNumGenerationTokens,
  kRequestParamsN,
  kRequestParamsMaxTokens,
  kTimeToFirstTokenSeconds,
  kInterTokenLatencySeconds,
  kRequestTimePerOutputTokenSeconds,
  kE2eRequestLatencySeconds,
  kRequestQueueTimeSeconds,
  kRequestInferenceTimeSeconds,
  kRequestPrefillTimeSeconds,
  kRequestDecodeTimeSeconds,
  kRequestNumPreemptions,
  kRequestPrefillKvComputedTokens,
  kKvBlockLifetimeSeconds,
  kKvBlockIdleBeforeEvictSeconds,
  kKvBlockReuseGapSeconds,
  kLoraRequestsInfo,
  kCacheConfigInfo,
  // vmetrics' own accounting (render group 1: after every `vllm:` family).
  kDecodeErrors,
  kUnknownEngineMessages,
  kKvConnectorPayloads,
  kEngineUp,
  kEngineWireInfo,
  kLabelValuesDropped,
  kWireValuesSkipped,
};

// Histogram bucket lists (src/metrics/buckets.h).
enum class BucketSet : uint8_t {
  kNone,
  kTokens125,  // build_1_2_5_buckets(max_model_len)
  kIterationTokens,
  kRequestParamsN,
  kTimeToFirstToken,
  kInterTokenLatency,
  kRequestLatency,
  kKvResidency,
  kRequestNumPreemptions,
};

// Which option registers the family.
enum class Gate : uint8_t {
  kAlways,
  kSpecDecode,      // num_speculative_tokens > 0, and not a diffusion model
  kDiffusion,       // --diffusion-model (vLLM's model_config.is_diffusion)
  kKvCacheMetrics,  // --kv-cache-metrics
  kLora,            // LoRA enabled (max_loras > 0)
  kEngineLiveness,  // `serve` watches its engines (track_engine_liveness)
  kEngineWire,      // `serve` reports each engine's wire generation (report_engine_wire)
  kKvConsumer,      // --kv-transfer-config with kv_role kv_consumer or kv_both
  kNansInLogits,    // VLLM_COMPUTE_NANS_IN_LOGITS set to a non-zero integer
  kFirstDrop,       // the first sample the cardinality guard drops (cardinality_guard.h)
};

// Which children exist before anything is recorded.
enum class Children : uint8_t {
  // At registration: one per engine when `engine` is a label (else one), times each value of
  // `eager` (values outer, engines inner, as Python builds its {value: {engine: child}} dicts).
  kEager,
  // At registration: per engine, one per speculative position 0 .. k-1 (engines outer).
  kEagerPerPosition,
  kOnFirstRecord,
  // The label names are known only at run time (the CacheConfig keys): registered without
  // labels or children, replaced once they are known (Registry::ReplaceFamily).
  kLabelsAtRunTime,
};

// A fixed-capacity list a constant table can hold.
template <typename T, size_t N>
class ConstList {
 public:
  constexpr ConstList() = default;
  constexpr ConstList(std::initializer_list<T> items) {  // NOLINT: written as a braced list
    for (const T& item : items) items_[size_++] = item;
  }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return items_[i]; }
  constexpr const T* begin() const { return items_.data(); }
  constexpr const T* end() const { return items_.data() + size_; }

 private:
  std::array<T, N> items_{};
  size_t size_ = 0;
};

// A value of the family's last label created at registration, and what its children start at.
struct EagerValue {
  constexpr EagerValue() = default;
  constexpr EagerValue(const char* v, double start = 0) : value(v), initial(start) {}  // NOLINT
  std::string_view value;
  double initial = 0;
};

using LabelNames = ConstList<std::string_view, 4>;
using EagerValues = ConstList<EagerValue, 6>;

// The labels of a family fed per engine: `model_name` takes the served model name, `engine`
// each data-parallel rank.
inline constexpr LabelNames kPerEngine = {"model_name", "engine"};

struct FamilyDeclaration {
  FamilyId id;
  std::string_view name;  // as registered: a counter's without `_total`
  MetricType type;
  std::string_view help;  // HELP, byte for byte
  // What feeds the family (wire field or frontend bookkeeping), for the metrics reference;
  // docs/recording.md has the full rules.
  std::string_view source;
  LabelNames labels = kPerEngine;
  EagerValues eager = {};  // values of the last label, for Children::kEager
  Children children = Children::kEager;
  BucketSet buckets = BucketSet::kNone;
  Gate gate = Gate::kAlways;
  // Families render in (render group, registration) order; vmetrics' own use group 1.
  int render_group = 0;
  bool before_connector_rows = false;
  double initial = 0;  // what eager children start at (an EagerValue may say otherwise)
};

inline constexpr FamilyDeclaration kDeclaredFamilies[] = {
    {.id = FamilyId::kSpecDecodeNumDrafts,
     .name = "vllm:spec_decode_num_drafts",
     .type = MetricType::kCounter,
     .help = "Number of spec decoding drafts.",
     .source = "add `spec_decoding_stats.num_drafts`",
     .gate = Gate::kSpecDecode,
     .before_connector_rows = true},
    {.id = FamilyId::kSpecDecodeNumDraftTokens,
     .name = "vllm:spec_decode_num_draft_tokens",
     .type = MetricType::kCounter,
     .help = "Number of draft tokens.",
     .source = "add `spec_decoding_stats.num_draft_tokens`",
     .gate = Gate::kSpecDecode,
     .before_connector_rows = true},
    {.id = FamilyId::kSpecDecodeNumAcceptedTokens,
     .name = "vllm:spec_decode_num_accepted_tokens",
     .type = MetricType::kCounter,
     .help = "Number of accepted tokens.",
     .source = "add `spec_decoding_stats.num_accepted_tokens`",
     .gate = Gate::kSpecDecode,
     .before_connector_rows = true},
    {.id = FamilyId::kSpecDecodeNumAcceptedTokensPerPos,
     .name = "vllm:spec_decode_num_accepted_tokens_per_pos",
     .type = MetricType::kCounter,
     .help = "Accepted tokens per draft position.",
     .source = "add `spec_decoding_stats.num_accepted_tokens_per_pos[position]`",
     .labels = {"model_name", "engine", "position"},
     .children = Children::kEagerPerPosition,
     .gate = Gate::kSpecDecode,
     .before_connector_rows = true},
    // A diffusion LLM (vLLM's ModelConfig.is_diffusion: the HF config has a canvas_length)
    // reuses the spec-decode data path: SpecDecodingProm registers these three instead of the
    // spec-decode families, with or without a speculative config, and no per-position family.
    {.id = FamilyId::kDiffusionNumDenoisingSteps,
     .name = "vllm:diffusion_num_denoising_steps",
     .type = MetricType::kCounter,
     .help = "Number of denoising steps.",
     .source = "add `spec_decoding_stats.num_drafts`; vllm/v1/spec_decode/metrics.py "
               "(SpecDecodingProm) at vllm-project/vllm 6adad087",
     .gate = Gate::kDiffusion,
     .before_connector_rows = true},
    {.id = FamilyId::kDiffusionNumCanvasPositions,
     .name = "vllm:diffusion_num_canvas_positions",
     .type = MetricType::kCounter,
     .help = "Number of canvas positions evaluated.",
     .source = "add `spec_decoding_stats.num_draft_tokens`; vllm/v1/spec_decode/metrics.py "
               "(SpecDecodingProm) at vllm-project/vllm 6adad087",
     .gate = Gate::kDiffusion,
     .before_connector_rows = true},
    {.id = FamilyId::kDiffusionNumCommittedTokens,
     .name = "vllm:diffusion_num_committed_tokens",
     .type = MetricType::kCounter,
     .help = "Number of committed (finalized) tokens.",
     .source = "add `spec_decoding_stats.num_accepted_tokens`; vllm/v1/spec_decode/metrics.py "
               "(SpecDecodingProm) at vllm-project/vllm 6adad087",
     .gate = Gate::kDiffusion,
     .before_connector_rows = true},
    {.id = FamilyId::kEstimatedFlopsPerGpu,
     .name = "vllm:estimated_flops_per_gpu",
     .type = MetricType::kCounter,
     .help = "Estimated number of floating point operations per GPU (for Model Flops "
             "Utilization calculations).",
     .source = "add `perf_stats.num_flops_per_gpu` (skipped when all three perf counts are 0)"},
    {.id = FamilyId::kEstimatedReadBytesPerGpu,
     .name = "vllm:estimated_read_bytes_per_gpu",
     .type = MetricType::kCounter,
     .help = "Estimated number of bytes read from memory per GPU (for Model Flops Utilization "
             "calculations).",
     .source = "add `perf_stats.num_read_bytes_per_gpu`"},
    {.id = FamilyId::kEstimatedWriteBytesPerGpu,
     .name = "vllm:estimated_write_bytes_per_gpu",
     .type = MetricType::kCounter,
     .help = "Estimated number of bytes written to memory per GPU (for Model Flops Utilization "
             "calculations).",
     .source = "add `perf_stats.num_write_bytes_per_gpu`"},
    {.id = FamilyId::kNumRequestsRunning,
     .name = "vllm:num_requests_running",
     .type = MetricType::kGauge,
     .help = "Number of requests in model execution batches.",
     .source = "set to `num_running_reqs`"},
    {.id = FamilyId::kNumRequestsWaiting,
     .name = "vllm:num_requests_waiting",
     .type = MetricType::kGauge,
     .help = "Number of requests waiting to be processed.",
     .source = "set to `num_waiting_reqs + num_skipped_waiting_reqs`"},
    {.id = FamilyId::kNumRequestsWaitingByReason,
     .name = "vllm:num_requests_waiting_by_reason",
     .type = MetricType::kGauge,
     .help = "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
             "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, "
             "KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
     .source = "capacity: set to `num_waiting_reqs`; deferred: set to `num_skipped_waiting_reqs`",
     .labels = {"model_name", "engine", "reason"},
     .eager = {"capacity", "deferred"}},
    // The newest upstream families below name the upstream file and commit they were read from
    // in their source text (docs/metrics.md shows it).
    {.id = FamilyId::kNumRequestsKvFetchByStage,
     .name = "vllm:num_requests_kv_fetch_by_stage",
     .type = MetricType::kGauge,
     .help = "Number of waiting requests by async KV load stage. Stage labels: "
             "'waiting_to_start' = needs an async KV load that has not started; 'in_progress' = "
             "load started and not yet reported finished; 'completed_waiting' = load finished, "
             "request not running yet.",
     .source = "set to `num_kv_fetch_reqs_by_stage[stage]` (0 when absent); "
               "vllm/v1/metrics/loggers.py at vllm-project/vllm 13cbd441",
     .labels = {"model_name", "engine", "stage"},
     .eager = {"waiting_to_start", "in_progress", "completed_waiting"},
     .gate = Gate::kKvConsumer},
    {.id = FamilyId::kEngineSleepState,
     .name = "vllm:engine_sleep_state",
     .type = MetricType::kGauge,
     .help = "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
             "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
             "level 2.",
     .source = "`awake` = 1 at registration; the frontend's sleep and wake calls",
     .labels = {"model_name", "engine", "sleep_state"},
     .eager = {{"awake", 1.0}, "weights_offloaded", "discard_all"}},
    {.id = FamilyId::kKvCacheUsagePerc,
     .name = "vllm:kv_cache_usage_perc",
     .type = MetricType::kGauge,
     .help = "KV-cache usage. 1 means 100 percent usage.",
     .source = "set to `kv_cache_usage`"},
    {.id = FamilyId::kCorruptedRequests,
     .name = "vllm:corrupted_requests",
     .type = MetricType::kCounter,
     .help = "Corrupted requests, in terms of total number of requests with NaNs in logits.",
     .source = "+1 per finished request any of whose outputs had `num_nans_in_logits` > 0; "
               "vllm/v1/metrics/loggers.py at vllm-project/vllm 13cbd441",
     .gate = Gate::kNansInLogits},
    {.id = FamilyId::kPrefixCacheQueries,
     .name = "vllm:prefix_cache_queries",
     .type = MetricType::kCounter,
     .help = "Prefix cache queries, in terms of number of queried tokens.",
     .source = "add `prefix_cache_stats.queries`"},
    {.id = FamilyId::kPrefixCacheHits,
     .name = "vllm:prefix_cache_hits",
     .type = MetricType::kCounter,
     .help = "Prefix cache hits, in terms of number of cached tokens.",
     .source = "add `prefix_cache_stats.hits`"},
    {.id = FamilyId::kExternalPrefixCacheQueries,
     .name = "vllm:external_prefix_cache_queries",
     .type = MetricType::kCounter,
     .help = "External prefix cache queries from KV connector cross-instance cache sharing, in "
             "terms of number of queried tokens.",
     .source = "add `connector_prefix_cache_stats.queries` (when present)"},
    {.id = FamilyId::kExternalPrefixCacheHits,
     .name = "vllm:external_prefix_cache_hits",
     .type = MetricType::kCounter,
     .help = "External prefix cache hits from KV connector cross-instance cache sharing, in "
             "terms of number of cached tokens.",
     .source = "add `connector_prefix_cache_stats.hits` (when present)"},
    {.id = FamilyId::kMmCacheQueries,
     .name = "vllm:mm_cache_queries",
     .type = MetricType::kCounter,
     .help = "Multi-modal cache queries, in terms of number of queried items.",
     .source = "the frontend's multi-modal processor cache (not on the wire)"},
    {.id = FamilyId::kMmCacheHits,
     .name = "vllm:mm_cache_hits",
     .type = MetricType::kCounter,
     .help = "Multi-modal cache hits, in terms of number of cached items.",
     .source = "the frontend's multi-modal processor cache (not on the wire)"},
    {.id = FamilyId::kNumPreemptions,
     .name = "vllm:num_preemptions",
     .type = MetricType::kCounter,
     .help = "Cumulative number of preemption from the engine.",
     .source = "add the PREEMPTED events of the request outputs"},
    {.id = FamilyId::kPromptTokens,
     .name = "vllm:prompt_tokens",
     .type = MetricType::kCounter,
     .help = "Number of prefill tokens processed.",
     .source = "add the prompt tokens of each request's first output (`prefill_stats`)"},
    {.id = FamilyId::kPromptTokensBySource,
     .name = "vllm:prompt_tokens_by_source",
     .type = MetricType::kCounter,
     .help = "Number of prompt tokens by source.",
     .source = "add `prefill_stats`: computed, local cache hit, external KV transfer tokens",
     .labels = {"model_name", "engine", "source"},
     .eager = {"local_compute", "local_cache_hit", "external_kv_transfer"}},
    {.id = FamilyId::kPromptTokensCached,
     .name = "vllm:prompt_tokens_cached",
     .type = MetricType::kCounter,
     .help = "Number of cached prompt tokens (local + external).",
     .source = "add `prefill_stats` cached tokens (local + external)"},
    // Values in CacheHitSource order (vllm/v1/metrics/cache_hit_source.py at vllm-project/vllm
    // 8548f56c).
    {.id = FamilyId::kPromptTokensCachedBySource,
     .name = "vllm:prompt_tokens_cached_by_source",
     .type = MetricType::kCounter,
     .help = "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), "
             "host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or "
             "external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + "
             "vllm:external_prefix_cache_hits.",
     .source = "device: add `prefix_cache_stats.hits`; the others: add "
               "`connector_prefix_cache_stats.hits_by_source[source]`; "
               "vllm/v1/metrics/loggers.py at vllm-project/vllm 13cbd441",
     .labels = {"model_name", "engine", "source"},
     .eager = {"device", "host", "p2p", "disk", "external_unspecified"}},
    {.id = FamilyId::kGenerationTokens,
     .name = "vllm:generation_tokens",
     .type = MetricType::kCounter,
     .help = "Number of generation tokens processed.",
     .source = "add the `new_token_ids` of the request outputs"},
    {.id = FamilyId::kRequestSuccess,
     .name = "vllm:request_success",
     .type = MetricType::kCounter,
     .help = "Count of successfully processed requests.",
     .source = "+1 per finished request, by `finish_reason`",
     .labels = {"model_name", "engine", "finished_reason"},
     .eager = {"stop", "length", "abort", "error", "repetition"}},
    {.id = FamilyId::kRequestPromptTokens,
     .name = "vllm:request_prompt_tokens",
     .type = MetricType::kHistogram,
     .help = "Number of prefill tokens processed.",
     .source = "finished request: its prompt tokens",
     .buckets = BucketSet::kTokens125},
    {.id = FamilyId::kRequestGenerationTokens,
     .name = "vllm:request_generation_tokens",
     .type = MetricType::kHistogram,
     .help = "Number of generation tokens processed.",
     .source = "finished request: its generation tokens",
     .buckets = BucketSet::kTokens125},
    {.id = FamilyId::kIterationTokensTotal,
     .name = "vllm:iteration_tokens_total",
     .type = MetricType::kHistogram,
     .help = "Histogram of number of tokens per engine_step.",
     .source = "per message with outputs: prompt tokens computed + generation tokens",
     .buckets = BucketSet::kIterationTokens},
    {.id = FamilyId::kRequestMaxNumGenerationTokens,
     .name = "vllm:request_max_num_generation_tokens",
     .type = MetricType::kHistogram,
     .help = "Histogram of maximum number of requested generation tokens.",
     .source = "finished request: the most generation tokens among its sequences",
     .buckets = BucketSet::kTokens125},
    {.id = FamilyId::kRequestParamsN,
     .name = "vllm:request_params_n",
     .type = MetricType::kHistogram,
     .help = "Histogram of the n request parameter.",
     .source = "finished request: its `n` parameter",
     .buckets = BucketSet::kRequestParamsN},
    {.id = FamilyId::kRequestParamsMaxTokens,
     .name = "vllm:request_params_max_tokens",
     .type = MetricType::kHistogram,
     .help = "Histogram of the max_tokens request parameter.",
     .source = "finished request: its `max_tokens` parameter",
     .buckets = BucketSet::kTokens125},
    {.id = FamilyId::kTimeToFirstTokenSeconds,
     .name = "vllm:time_to_first_token_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time to first token in seconds.",
     .source = "first output of a request: time since arrival",
     .buckets = BucketSet::kTimeToFirstToken},
    {.id = FamilyId::kInterTokenLatencySeconds,
     .name = "vllm:inter_token_latency_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of inter-token latency in seconds.",
     .source = "each later output: time since the previous one",
     .buckets = BucketSet::kInterTokenLatency},
    {.id = FamilyId::kRequestTimePerOutputTokenSeconds,
     .name = "vllm:request_time_per_output_token_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time_per_output_token_seconds per request.",
     .source = "finished request: mean time per output token",
     .buckets = BucketSet::kInterTokenLatency},
    {.id = FamilyId::kE2eRequestLatencySeconds,
     .name = "vllm:e2e_request_latency_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of e2e request latency in seconds.",
     .source = "finished request: time from arrival to finish",
     .buckets = BucketSet::kRequestLatency},
    {.id = FamilyId::kRequestQueueTimeSeconds,
     .name = "vllm:request_queue_time_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time spent in WAITING phase for request.",
     .source = "finished request: QUEUED to first SCHEDULED event",
     .buckets = BucketSet::kRequestLatency},
    {.id = FamilyId::kRequestInferenceTimeSeconds,
     .name = "vllm:request_inference_time_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time spent in RUNNING phase for request.",
     .source = "finished request: first SCHEDULED event to last token",
     .buckets = BucketSet::kRequestLatency},
    {.id = FamilyId::kRequestPrefillTimeSeconds,
     .name = "vllm:request_prefill_time_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time spent in PREFILL phase for request.",
     .source = "finished request: first SCHEDULED event to first token",
     .buckets = BucketSet::kRequestLatency},
    {.id = FamilyId::kRequestDecodeTimeSeconds,
     .name = "vllm:request_decode_time_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time spent in DECODE phase for request.",
     .source = "finished request: first token to last token",
     .buckets = BucketSet::kRequestLatency},
    {.id = FamilyId::kRequestNumPreemptions,
     .name = "vllm:request_num_preemptions",
     .type = MetricType::kHistogram,
     .help = "Histogram of the number of times a request was preempted.",
     .source = "finished request: its PREEMPTED events; vllm/v1/metrics/loggers.py at "
               "vllm-project/vllm 13cbd441, buckets vllm/v1/metrics/buckets.py at 139b1c3f",
     .buckets = BucketSet::kRequestNumPreemptions},
    {.id = FamilyId::kRequestPrefillKvComputedTokens,
     .name = "vllm:request_prefill_kv_computed_tokens",
     .type = MetricType::kHistogram,
     .help = "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
     .source = "finished request: prompt tokens minus cached tokens",
     .buckets = BucketSet::kTokens125},
    {.id = FamilyId::kKvBlockLifetimeSeconds,
     .name = "vllm:kv_block_lifetime_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of KV cache block lifetime from allocation to eviction. Sampled metrics "
             "(controlled by --kv-cache-metrics-sample).",
     .source = "observe each `kv_cache_eviction_events[].lifetime_seconds`",
     .buckets = BucketSet::kKvResidency,
     .gate = Gate::kKvCacheMetrics},
    {.id = FamilyId::kKvBlockIdleBeforeEvictSeconds,
     .name = "vllm:kv_block_idle_before_evict_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of idle time before KV cache block eviction. Sampled metrics (controlled "
             "by --kv-cache-metrics-sample).",
     .source = "observe each `kv_cache_eviction_events[].idle_seconds`",
     .buckets = BucketSet::kKvResidency,
     .gate = Gate::kKvCacheMetrics},
    {.id = FamilyId::kKvBlockReuseGapSeconds,
     .name = "vllm:kv_block_reuse_gap_seconds",
     .type = MetricType::kHistogram,
     .help = "Histogram of time gaps between consecutive KV cache block accesses. Only the most "
             "recent accesses are recorded (ring buffer). Sampled metrics (controlled by "
             "--kv-cache-metrics-sample).",
     .source = "observe every element of `kv_cache_eviction_events[].reuse_gaps_seconds`",
     .buckets = BucketSet::kKvResidency,
     .gate = Gate::kKvCacheMetrics},
    // Python registers it after the residency histograms; no model_name, no engine.
    {.id = FamilyId::kLoraRequestsInfo,
     .name = "vllm:lora_requests_info",
     .type = MetricType::kGauge,
     .help = "Running stats on lora requests.",
     .source = "SchedulerStats `waiting_lora_adapters` / `running_lora_adapters` with the "
               "frontend's adapters of the requests in flight: their names comma-joined, "
               "`max_lora` = `--max-loras`; set to the current Unix time; a child per "
               "combination, on first record",
     .labels = {"max_lora", "waiting_lora_adapters", "running_lora_adapters"},
     .children = Children::kOnFirstRecord,
     .gate = Gate::kLora},
    // Labelled with the CacheConfig keys and `engine` (no model_name) once they are known.
    {.id = FamilyId::kCacheConfigInfo,
     .name = "vllm:cache_config_info",
     .type = MetricType::kGauge,
     .help = "Information of the LLMEngine CacheConfig",
     .source = "`serve`: the engines' ready responses, value 1.0; `replay`: HELP and TYPE only",
     .labels = {},
     .children = Children::kLabelsAtRunTime},
    // The part values are DecodePart's, in its order (engine_core_outputs.h).
    {.id = FamilyId::kDecodeErrors,
     .name = "vmetrics_decode_errors",
     .type = MetricType::kCounter,
     .help = "Parts of EngineCoreOutputs messages that could not be decoded and were skipped: "
             "the whole message (part=message, nothing recorded), or one output entry, the "
             "SchedulerStats, the utility output or finished_requests (the rest of the message "
             "recorded).",
     .source = "+1 per message that does not decode, or per part of one that is skipped",
     .labels = {"part"},
     .eager = {"message", "output", "scheduler_stats", "utility_output", "finished_requests"},
     .render_group = 1},
    {.id = FamilyId::kUnknownEngineMessages,
     .name = "vmetrics_unknown_engine_messages",
     .type = MetricType::kCounter,
     .help = "EngineCoreOutputs messages from an engine index outside the configured "
             "data-parallel ranks, skipped.",
     .source = "+1 per message from an engine index that is not configured",
     .labels = {},
     .render_group = 1},
    // The HELP is shared with tools/gen_goldens.py; invalid_descriptor (docs/recording.md) is
    // not listed in it yet so the existing goldens stay as they are.
    {.id = FamilyId::kKvConnectorPayloads,
     .name = "vmetrics_kv_connector_payloads",
     .type = MetricType::kCounter,
     .help = "KV-connector payloads received in SchedulerStats.kv_connector_stats, by connector "
             "class name and outcome (recorded, unknown_connector, malformed).",
     .source = "+1 per kv_connector_stats payload, by its connector and what recording did",
     .labels = {"connector", "outcome"},
     .children = Children::kOnFirstRecord,
     .render_group = 1},
    {.id = FamilyId::kEngineUp,
     .name = "vmetrics_engine_up",
     .type = MetricType::kGauge,
     .help = "1 while the engine is ready and alive, 0 before it is ready and after it died.",
     .source = "the engine-core client's liveness (heartbeats, ENGINE_CORE_DEAD, process exit)",
     .labels = {"engine"},
     .gate = Gate::kEngineLiveness,
     .render_group = 1,
     .initial = 1.0},
    {.id = FamilyId::kEngineWireInfo,
     .name = "vmetrics_engine_wire_info",
     .type = MetricType::kGauge,
     .help = "Wire generation each engine was recognised as (the layout its EngineCoreOutputs "
             "messages are decoded with) and the layout its requests are encoded with: 1 for "
             "the current pair, 0 for one it was taken for before.",
     .source = "the recognition of each engine's wire generation (handshake and first messages)",
     .labels = {"engine", "generation", "requests"},
     .children = Children::kOnFirstRecord,
     .gate = Gate::kEngineWire,
     .render_group = 1},
    // Registered on the first drop, so renderings without drops stay byte-identical to the
    // Python frontend's.
    {.id = FamilyId::kLabelValuesDropped,
     .name = "vmetrics_label_values_dropped",
     .type = MetricType::kCounter,
     .help = "Samples dropped because they carried a new label value for a family that already "
             "has --max-label-values-per-family children.",
     .source = "+1 per sample whose new label value the cardinality guard refused",
     .labels = {"family"},
     .children = Children::kOnFirstRecord,
     .gate = Gate::kFirstDrop,
     .render_group = 1},
    // Registered, with a child for every reason (kWireSkipReasons in cardinality_guard.h), on
    // the first skip, for the same reason as the row above.
    {.id = FamilyId::kWireValuesSkipped,
     .name = "vmetrics_wire_values_skipped",
     .type = MetricType::kCounter,
     .help = "Single values inside decoded messages that were skipped (the rest was recorded), "
             "by reason.",
     .source = "+1 per value skipped: wrong_type, negative_increment, nan_increment, "
               "integer_overflow, invalid_utf8, label_value_too_long, label_values_limit",
     .labels = {"reason"},
     .children = Children::kOnFirstRecord,
     .gate = Gate::kFirstDrop,
     .render_group = 1},
};

inline constexpr size_t kNumDeclaredFamilies = std::size(kDeclaredFamilies);

constexpr const FamilyDeclaration& Declaration(FamilyId id) {
  return kDeclaredFamilies[static_cast<size_t>(id)];
}

// The FamilyIds and the rows are in one order (a row out of place does not compile).
constexpr bool RowsFollowTheIds() {
  for (size_t i = 0; i < kNumDeclaredFamilies; ++i) {
    if (static_cast<size_t>(kDeclaredFamilies[i].id) != i) return false;
  }
  return kNumDeclaredFamilies == static_cast<size_t>(FamilyId::kWireValuesSkipped) + 1;
}
static_assert(RowsFollowTheIds(), "kDeclaredFamilies rows must follow the FamilyId order");

// What registration relies on: a histogram has buckets and nothing else does; only gauges
// start at a value other than 0; eager values fill the last label, the only one that is not
// model_name or engine (and one exists exactly when there are eager values); the per-position
// family is labelled model_name, engine, position.
constexpr bool RowIsConsistent(const FamilyDeclaration& d) {
  if ((d.type == MetricType::kHistogram) != (d.buckets != BucketSet::kNone)) return false;
  bool starts_at_zero = d.initial == 0;
  for (const EagerValue& v : d.eager) starts_at_zero = starts_at_zero && v.initial == 0;
  if (!starts_at_zero && d.type != MetricType::kGauge) return false;
  size_t others = 0;
  for (size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] == "model_name" || d.labels[i] == "engine") continue;
    if (i + 1 != d.labels.size() && d.children != Children::kOnFirstRecord) return false;
    ++others;
  }
  switch (d.children) {
    case Children::kEager:
      return others == (d.eager.empty() ? 0u : 1u);
    case Children::kEagerPerPosition:
      return d.labels.size() == 3 && d.labels[0] == "model_name" && d.labels[1] == "engine" &&
             d.eager.empty();
    case Children::kOnFirstRecord:
    case Children::kLabelsAtRunTime:
      return d.eager.empty() && starts_at_zero;
  }
  return false;
}
constexpr bool RowsAreConsistent() {
  for (const FamilyDeclaration& d : kDeclaredFamilies) {
    if (!RowIsConsistent(d)) return false;
  }
  return true;
}
static_assert(RowsAreConsistent(), "a kDeclaredFamilies row breaks a rule of RowIsConsistent");

// The position of `value` in the family's eager values; not a constant (so a compile error
// where a constant is needed) when the family has no such value.
consteval size_t EagerIndex(FamilyId id, std::string_view value) {
  const EagerValues& values = Declaration(id).eager;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].value == value) return i;
  }
  throw "no such eager value";  // NOLINT: a consteval failure is a compile error
}

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_DECLARED_FAMILIES_H_
