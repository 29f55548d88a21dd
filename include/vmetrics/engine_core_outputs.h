// SPDX-License-Identifier: Apache-2.0
// File: engine_core_outputs.h
//
// Typed model of what vLLM's EngineCore sends its frontend on the output socket, and the
// decoder that fills it from msgpack frames. Layout and defaults mirror
// vllm/v1/engine/__init__.py and vllm/v1/metrics/stats.py at vLLM commit 6adad087 (plus the
// newer keys called out per field); see docs/wire_format.md for the byte layout.
//
// Lifetime: every std::string_view in these structs points into the frames passed to the
// decoder; the frames must outlive the decoded value.
//
// Thread safety: plain values. Decoding is reentrant.
#ifndef VMETRICS_ENGINE_CORE_OUTPUTS_H_
#define VMETRICS_ENGINE_CORE_OUTPUTS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/reporter.h"
#include "vmetrics/status.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {

// FinishReason IntEnum; str() of it is the `finished_reason` label.
enum class FinishReason : uint8_t {
  kStop = 0,
  kLength = 1,
  kAbort = 2,
  kError = 3,
  kRepetition = 4
};
const char* FinishReasonName(FinishReason reason);  // "stop", "length", ...

// EngineCoreEventType IntEnum.
enum class EventType : uint8_t { kQueued = 1, kScheduled = 2, kPreempted = 3 };

// EngineCoreEvent: msgspec Struct encoded as a map {type, timestamp}; timestamp is the
// engine's time.monotonic().
struct EngineCoreEvent {
  EventType type = EventType::kQueued;
  double timestamp = 0;
};

// PrefillStats (dataclass, map; every key defaults to 0). Sent on a request's first output.
struct PrefillStats {
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;
  int64_t num_cached_tokens = 0;
  int64_t num_local_cached_tokens = 0;
  int64_t num_external_cached_tokens = 0;
  int64_t num_cache_creation_tokens = 0;  // newer engines
};

// A tensor triple [dtype, shape, data] (vllm/v1/serial_utils.py). `data` is ext type 3 inline
// bytes, or an index into the message's aux frames (resolved when the frame exists).
struct Tensor {
  std::string_view dtype;  // numpy descriptor ("<f4") or torch name ("float32")
  std::vector<int64_t> shape;
  int32_t aux_frame = -1;  // >= 1 when the data travelled as an aux frame
  // The raw bytes. An index naming an aux frame the message does not have makes the message
  // malformed, as it does in Python's decoder.
  std::string_view data;
};

// NumpyArrayProblem
//
// Why `t` cannot be read as the numpy array vLLM's MsgpackEncoder sent (an ndarray travels as
// [dtype.str, shape, data]), or "" when it can: `dtype` must be a little-endian or
// byte-order-free descriptor of a bool, integer or float kind ("|b1", "|u1", "<u2", "<i4",
// "<i8", "<f4", ...), the shape's dimensions non-negative, and `data` exactly their product
// times the item size (a C-contiguous array, the only kind the encoder sends raw).
std::string NumpyArrayProblem(const Tensor& t);

// The byte size of one item of a NumpyArrayProblem-valid dtype ("<u2" -> 2).
size_t NumpyItemSize(std::string_view dtype);

// SamplingMaskLists (vllm/v1/outputs.py at vllm-project/vllm 6adad087; a NamedTuple, so an
// array [token_ids, offsets, cu_num_generated_tokens]): for each token of the output, the
// vocabulary ids that survived top-k / top-p / min-p, in CSR form: position i's ids are
// token_ids[offsets[i]:offsets[i + 1]]. Both are 1-D integer ndarrays, offsets
// non-decreasing; cu_num_generated_tokens is None on the wire (the engine slices per request).
struct SamplingMaskLists {
  Tensor token_ids;
  Tensor offsets;
};

// RequestSpecDecodeMetrics: one request's speculative-decoding acceptance, which an engine of
// the newest layout sends on the request's final output when it runs with
// --per-request-spec-decode-metrics summary|detailed (vLLM PR #48915; a map). `histogram[j]`
// counts the verification steps that accepted exactly j draft tokens (num_spec_tokens + 1
// entries); `num_draft_tokens` the drafts proposed; the per-step lists, in step order, are
// filled by `detailed` engines only (empty otherwise).
struct RequestSpecDecodeMetrics {
  int64_t num_spec_tokens = 0;
  std::vector<int64_t> histogram;
  int64_t num_draft_tokens = 0;
  std::vector<int64_t> per_step_accepted;
  std::vector<int64_t> per_step_drafted;
  int64_t num_spec_steps = 0;             // sum of histogram
  int64_t num_accepted_draft_tokens = 0;  // sum of j * histogram[j]
};

// DecodeSpecDecodeMetrics
//
// Reads the raw map EngineCoreOutput::spec_decode_metrics holds into `out` (null: only checks
// it). Malformed unless every value a genuine engine sends holds: `num_spec_tokens` present,
// 0 to 1024; `histogram` num_spec_tokens + 1 integers; counts and list entries non-negative
// integers; the per-step lists of one length; the step and accepted-token sums within int64.
// Keys it does not know are skipped (a newer engine's).
Status DecodeSpecDecodeMetrics(std::string_view raw, RequestSpecDecodeMetrics* out);

// LogprobsLists / LogprobsTensors (NamedTuples, arrays). Each position holds a tensor triple
// or something else (nil, a plain list), which is kept as "not a tensor".
struct Logprobs {
  std::vector<std::optional<Tensor>> fields;
};

// stop_reason: int token id, str stop string, or nil.
struct StopReason {
  enum class Kind : uint8_t { kNone, kTokenId, kString } kind = Kind::kNone;
  int64_t token_id = 0;
  std::string_view text;
};

// EngineCoreOutput: msgspec Struct, array_like. Which field each position holds depends on the
// engine's wire generation (wire_generation.h: 11 positions in 2025-09, 16 at 6adad087, 17 in
// the newest layout); the decoder reads it through the generation's table. Positions 0-1 are
// required; missing trailing positions take their defaults; extra trailing positions are
// skipped.
struct EngineCoreOutput {
  std::string_view request_id;
  std::vector<int64_t> new_token_ids;
  std::optional<Logprobs> new_logprobs;
  std::optional<Logprobs> new_prompt_logprobs_tensors;
  std::optional<Tensor> pooling_output;  // a tensor triple when present
  bool has_pooling_output = false;
  std::optional<FinishReason> finish_reason;
  StopReason stop_reason;
  std::optional<std::vector<EngineCoreEvent>> events;  // nil on the wire when there are none
  std::string_view kv_transfer_params;                 // raw msgpack, empty when nil
  std::string_view ec_transfer_params;                 // raw msgpack, empty when nil
  std::string_view trace_headers;                      // raw msgpack, empty when nil
  std::optional<PrefillStats> prefill_stats;
  // Older generations (up to g20260413) send these on every output instead of prefill_stats;
  // the frontend turns them into the request's prefill statistics with the prompt length it
  // knows (PrefillStatsOfOlderEngine, iteration_stats.h).
  bool has_num_cached_tokens = false;
  int64_t num_cached_tokens = 0;
  int64_t num_external_computed_tokens = 0;  // g20260413 only; 0 before
  bool has_routed_experts = false;
  // The request's expert routing for this output's tokens (np.ndarray [tokens, layers,
  // experts per token], NumpyArrayProblem-valid with rank >= 1); g20260204 on. An output whose
  // value is neither nil nor such an array does not decode.
  std::optional<Tensor> routed_experts;
  int64_t num_nans_in_logits = 0;
  std::vector<std::string_view> mm_cache_miss_hashes;
  bool has_new_sampling_mask = false;
  // g20260814 on (the engine's --return-sampling-mask); checked as SamplingMaskLists says.
  std::optional<SamplingMaskLists> new_sampling_mask;
  // The newest layout's RequestSpecDecodeMetrics map as raw msgpack, empty when nil. Always
  // DecodeSpecDecodeMetrics-valid: the decoder drops one it refuses (left empty, the output
  // kept) and reports it as a skipped value (wrong_type).
  std::string_view spec_decode_metrics;
  uint32_t wire_fields = 0;  // positions present on the wire
};

// BaseCacheStats + PrefixCacheStats (dataclass, map). Values are per-step deltas.
struct PrefixCacheStats {
  bool reset = false;
  int64_t requests = 0;
  int64_t queries = 0;
  int64_t hits = 0;
  int64_t preempted_requests = 0;
  int64_t preempted_queries = 0;
  int64_t preempted_hits = 0;
  // Newer engines: tier -> tokens (device, host, p2p, disk, external_unspecified).
  std::vector<std::pair<std::string_view, int64_t>> hits_by_source;
};

struct SchedulerIterationDetails {
  int64_t iteration_index = 0;
  int64_t num_ctx_requests = 0;
  int64_t num_ctx_tokens = 0;
  int64_t num_generation_requests = 0;
  int64_t num_generation_tokens = 0;
  double elapsed_ms = 0;
  int64_t num_encoder_inputs = 0;
  int64_t num_encoder_output_tokens = 0;
  bool is_dummy = false;
};

struct KvCacheEvictionEvent {
  double lifetime_seconds = 0;
  double idle_seconds = 0;
  std::vector<double> reuse_gaps_seconds;
};

struct SpecDecodingStats {
  int64_t num_spec_tokens = 0;
  int64_t num_drafts = 0;
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  std::vector<int64_t> num_accepted_tokens_per_pos;
  std::vector<int64_t> num_draft_tokens_per_pos;
};

struct CudagraphStats {
  int64_t num_unpadded_tokens = 0;
  int64_t num_padded_tokens = 0;
  int64_t num_paddings = 0;
  std::string_view runtime_mode;
};

struct PerfStats {
  int64_t num_flops_per_gpu = 0;
  int64_t num_read_bytes_per_gpu = 0;
  int64_t num_write_bytes_per_gpu = 0;
  bool has_debug_stats = false;
};

// Newer engines: confirmed sleep state of each resource.
struct SleepState {
  bool scheduler_paused = false;
  std::string_view weights = "resident";
  std::string_view kv_cache = "resident";
};

// Reserved payload keys (vLLM metrics_descriptor.py): the descriptor itself and the number of
// engine steps an aggregated payload covers. Neither counts when a payload is identified by
// its shape, and no metric may read them.
inline constexpr std::string_view kMetricsDescriptorKey = "_metrics_descriptor";
inline constexpr std::string_view kNStepsKey = "_n_steps";
inline bool IsReservedPayloadKey(std::string_view key) {
  return key == kMetricsDescriptorKey || key == kNStepsKey;
}

// What names a kv_connector_stats payload as decoding finds it: the configuration or the wire.
// Which connector row records it (shape rules, descriptors, the catalog) is decided by the
// metrics library (connector_identification.h).
enum class PayloadNamedBy : uint8_t {
  kConfigured,     // the configured connector (--kv-transfer-config or the ready response)
  kMultiChildKey,  // the class-name key of a MultiConnector child
  kNothing,        // no connector configured: the whole kv_connector_stats map, unnamed
};

// One connector's payload inside kv_connector_stats, as the wire delimits it: not yet tied to
// a connector row. Every view points into frame 0, except `connector`, which may point into
// the DecodeContext's ConnectorConfig (the configured name).
struct ConnectorPayload {
  // Class name for labels and logs: the configured connector or the child key; "" for a map
  // named by nothing; "unknown" for a malformed payload with no name.
  std::string_view connector;
  PayloadNamedBy named_by = PayloadNamedBy::kNothing;
  bool data_wrapped = false;  // pre-September-2026 Multi child {"data": {...}}, unwrapped
  bool malformed = false;     // the payload is not a map
  // The Multi child key is not valid UTF-8: refused (malformed, connector "unknown"), so the
  // bytes never become a label value.
  bool invalid_utf8_name = false;
  std::string_view payload;     // raw msgpack of the (unwrapped) payload
  size_t payload_offset = 0;    // byte offset of `payload` in frame 0
  std::string_view descriptor;  // raw `_metrics_descriptor` value, if the payload carries one
};

struct KvConnectorStats {
  bool multi = false;  // a MultiConnector is configured: the payloads are its children
  std::vector<ConnectorPayload> payloads;
  std::string_view raw;  // the whole kv_connector_stats value
};

// SchedulerStats.ec_connector_stats: the configured EC (encoder cache) connector's payload, as
// ECConnectorStats.data of the ECCPUConnector kind sends it: {"types": name -> "counter" |
// "histogram", "data": name -> number | list of numbers}. One entry per `data` name whose type
// and value agree; an entry with no type, an unknown type or a value of the wrong shape is
// reported (wrong_type) and left out, as is a histogram sample that is not a number.
struct EcConnectorValue {
  std::string_view name;        // the family name, e.g. vllm:ec_cpu_save_bytes
  bool histogram = false;       // types[name] == "histogram" (else "counter")
  double increment = 0;         // a counter's
  std::vector<double> samples;  // a histogram's observations, in order
};
struct EcConnectorStats {
  std::vector<EcConnectorValue> values;  // in `data` order
};

// SchedulerStats (dataclass, map keyed by field name). Unknown keys are ignored, missing keys
// take these defaults, and a value of the wrong type skips that field (reported).
struct SchedulerStats {
  int64_t num_running_reqs = 0;
  int64_t num_waiting_reqs = 0;
  int64_t num_skipped_waiting_reqs = 0;
  // Newer engines: requests waiting for an async KV load, by stage (waiting_to_start,
  // in_progress, completed_waiting); other keys are kept and ignored by recording.
  std::vector<std::pair<std::string_view, int64_t>> num_kv_fetch_reqs_by_stage;
  int64_t step_counter = 0;
  int64_t current_wave = 0;
  double kv_cache_usage = 0;
  std::optional<SchedulerIterationDetails> iteration_details;
  PrefixCacheStats prefix_cache_stats;
  std::optional<PrefixCacheStats> connector_prefix_cache_stats;
  std::vector<KvCacheEvictionEvent> kv_cache_eviction_events;
  std::optional<SpecDecodingStats> spec_decoding_stats;
  std::optional<KvConnectorStats> kv_connector_stats;
  std::optional<EcConnectorStats> ec_connector_stats;  // newest engines with an EC connector
  std::vector<std::pair<std::string_view, int64_t>> waiting_lora_adapters;
  std::vector<std::pair<std::string_view, int64_t>> running_lora_adapters;
  std::optional<CudagraphStats> cudagraph_stats;
  std::optional<PerfStats> perf_stats;
  std::optional<SleepState> sleep_state;
  bool sleep_state_only = false;
};

// UtilityOutput: array_like [call_id, failure_message, result]. call_id may be a u64 or
// negative (-1 elastic-EP, -2 fault tolerance).
struct UtilityOutput {
  int64_t call_id = 0;       // as a signed value when it fits
  uint64_t call_id_u64 = 0;  // the unsigned value when call_id_is_u64
  bool call_id_is_u64 = false;
  std::optional<std::string_view> failure_message;
  std::string_view result;  // raw msgpack of the UtilityResult, empty when nil
};

// The parts of a message that did not decode and were skipped while the rest of the message was
// decoded (vmetrics_decode_errors_total{part}; docs/design.md §4.2). A failure of the message as
// a whole is DecodeEngineCoreOutputs' return value instead.
enum class DecodePart : uint8_t {
  kMessage,  // not one msgpack value, envelope not an array, trailing bytes, pickle
  kOutput,   // one EngineCoreOutput entry
  kSchedulerStats,
  kUtilityOutput,
  kFinishedRequests,
};
inline constexpr size_t kDecodeParts = 5;
const char* DecodePartName(DecodePart part);  // "message", "output", "scheduler_stats", ...

struct DecodeSkips {
  uint32_t outputs = 0;
  uint32_t scheduler_stats = 0;
  uint32_t utility_output = 0;
  uint32_t finished_requests = 0;
  bool any() const { return (outputs | scheduler_stats | utility_output | finished_requests) != 0; }
};

// EngineCoreOutputs: msgspec Struct, array_like; 8 positions in every generation. All
// positions default.
struct EngineCoreOutputs {
  int64_t engine_index = 0;
  std::vector<EngineCoreOutput> outputs;
  std::optional<SchedulerStats> scheduler_stats;
  double timestamp = 0;
  std::optional<UtilityOutput> utility_output;
  std::optional<std::vector<std::string_view>> finished_requests;
  std::optional<int64_t> wave_complete;
  std::optional<int64_t> start_wave;
  uint32_t wire_fields = 0;  // positions present on the wire
  size_t wire_bytes = 0;     // size of frame 0
  DecodeSkips skipped;       // parts skipped because they did not decode
};

// The connectors this frontend was configured with: vLLM's --kv-transfer-config
// `kv_connector`, and for MultiConnector the `kv_connector` of each entry of
// `kv_connector_extra_config.connectors`, in config order.
struct ConnectorConfig {
  std::string connector;              // "" = none configured
  std::vector<std::string> children;  // MultiConnector children
  std::string kv_role;                // kv_producer, kv_consumer, kv_both; "" = not given

  // The string values of each configured connector's `kv_connector_extra_config` (the
  // top-level connector's, and each MultiConnector child's under its class name; the first
  // entry of a class name wins), in config order. Row metrics gated on the configuration
  // (MetricDef::fed_when) read them; values of other JSON types are not kept.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
      extra_config;

  // The values of each configured connector's `kv_connector_extra_config` that Python's int()
  // accepts (a JSON integer; a finite float, truncated toward zero; a bool as 0 or 1; a string
  // holding a base-10 integer, with surrounding whitespace), keyed as `extra_config`. Row
  // metrics registered under an integer threshold (ExtraConfigGate::int_at_least) read them.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, int64_t>>>>
      extra_config_ints;

  bool configured() const { return !connector.empty(); }
  bool is_multi() const { return connector == "MultiConnector"; }
  // The string value of `key` in the kv_connector_extra_config of the configured connector
  // `class_name`, or nullopt (not configured, no such key, or not a string).
  std::optional<std::string_view> ExtraConfigString(std::string_view class_name,
                                                    std::string_view key) const {
    for (const auto& [name, entries] : extra_config) {
      if (name != class_name) continue;
      for (const auto& [k, v] : entries) {
        if (k == key) return std::string_view(v);
      }
      return std::nullopt;
    }
    return std::nullopt;
  }
  // The integer value of `key` in the kv_connector_extra_config of the configured connector
  // `class_name` (as `extra_config_ints` keeps it), or nullopt.
  std::optional<int64_t> ExtraConfigInt(std::string_view class_name, std::string_view key) const {
    for (const auto& [name, entries] : extra_config_ints) {
      if (name != class_name) continue;
      for (const auto& [k, v] : entries) {
        if (k == key) return v;
      }
      return std::nullopt;
    }
    return std::nullopt;
  }
  // KVTransferConfig.is_kv_consumer (vllm/config/kv_transfer.py at vllm-project/vllm
  // 9dc49464): a connector is configured and its role is kv_consumer or kv_both.
  bool is_kv_consumer() const {
    return configured() && (kv_role == "kv_consumer" || kv_role == "kv_both");
  }
  // Parses vLLM's --kv-transfer-config JSON. Throws nothing; a bad document is an error.
  static Result<ConnectorConfig> FromKvTransferConfigJson(std::string_view json);
};

// The EC (encoder cache) connector this frontend was configured with: vLLM's
// --ec-transfer-config (ECTransferConfig as JSON) `ec_connector` and `ec_role`.
struct EcConnectorConfig {
  std::string connector;  // "" = none configured
  std::string ec_role;    // ec_producer, ec_consumer, ec_both; "" = not given

  bool configured() const { return !connector.empty(); }
  // Parses --ec-transfer-config: a JSON object; `ec_connector` a string or null, `ec_role`
  // null or one of ec_producer, ec_consumer, ec_both, `ec_connector_extra_config` an object;
  // other ECTransferConfig keys are not read. Every error names the flag.
  static Result<EcConnectorConfig> FromEcTransferConfigJson(std::string_view json);
};

struct DecodeContext {
  const ConnectorConfig* connectors = nullptr;  // nullptr = none configured
  Reporter* reporter = nullptr;                 // nullptr = problems are dropped
  uint64_t message_number = 0;
  // The engine's wire generation (wire_decoder.h recognises it); nullptr = the newest.
  const WireGeneration* wire = nullptr;

  // Reports a problem that does not stop the message (nothing without a reporter); `kind`
  // says what kind of value was skipped, for vmetrics_wire_values_skipped_total.
  void Report(int64_t offset, std::string_view connector, std::string_view key, std::string what,
              ProblemKind kind = ProblemKind::kOther) const {
    if (reporter == nullptr) return;
    Problem p;
    p.kind = kind;
    p.message_number = message_number;
    p.offset = offset;
    p.connector = connector;
    p.key = key;
    p.what = std::move(what);
    reporter->Report(p);
  }
};

// The single-frame message an engine sends before it exits.
inline constexpr std::string_view kEngineCoreDead = "ENGINE_CORE_DEAD";
inline bool IsEngineCoreDead(std::span<const std::string_view> frames) {
  return frames.size() == 1 && frames[0] == kEngineCoreDead;
}

// DecodeEngineCoreOutputs
//
// Decodes frame 0 (msgpack EngineCoreOutputs) with frames 1..n as aux buffers into `out`
// (cleared first; its vectors keep their capacity, so reusing one `out` avoids allocation),
// reading EngineCoreOutput positions through ctx.wire's table. A part that does not decode —
// one output entry, the SchedulerStats, the utility output, finished_requests — is skipped,
// counted in out->skipped and reported through ctx.reporter; the rest of the message is
// decoded. Problems inside SchedulerStats and kv_connector_stats that cost one field only were
// reported too. Fails (Malformed, Unsupported, LimitExceeded) only for the message as a whole:
// frame 0 is not one complete msgpack value, the envelope is not an array, its engine_index or
// timestamp is not a number, a pickle ext type appears anywhere, a tensor names an aux frame
// the message does not have, or bytes trail the value.
//
// Example:
//   EngineCoreOutputs out;
//   std::string_view frames[] = {frame0};
//   ASSERT_TRUE(DecodeEngineCoreOutputs(frames, {}, &out).ok());
Status DecodeEngineCoreOutputs(std::span<const std::string_view> frames, const DecodeContext& ctx,
                               EngineCoreOutputs* out);

// Decodes one SchedulerStats map from `data` (used by the above; exposed for tests).
Status DecodeSchedulerStats(std::string_view data, size_t base_offset, const DecodeContext& ctx,
                            SchedulerStats* out);

}  // namespace vmetrics

#endif  // VMETRICS_ENGINE_CORE_OUTPUTS_H_
