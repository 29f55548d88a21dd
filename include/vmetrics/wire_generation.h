// SPDX-License-Identifier: Apache-2.0
// File: wire_generation.h
//
// Wire generations: the layouts of vLLM's EngineCore output stream that a metrics frontend must
// read, one table per generation, from vLLM PR #22188 (2025-09-19, kv_connector_stats in
// SchedulerStats) to the newest layout vmetrics knows. A generation is a span of upstream main
// during which those bytes did not change; it is named after the last day of the span and the
// commit that represents it (`g20260814-6adad087`). docs/wire_format.md lists the upstream
// commits each was read from, and its layout tables are generated from these (`vmetrics
// wire-reference`).
//
// A table says, per generation: what each position of EngineCoreOutput holds (the decoder looks
// the field up by position and switches on the field, so no position number is written in
// code), which keys SchedulerStats carries (StatsKey; what each key is: kStatsKeyRows, the
// one SchedulerStats field table), how many keys the nested statistics maps have, the
// NIXL payload's keys, the logprobs form, the highest FinishReason, and how the engine
// introduces itself (its ready response and READY forms). EngineCoreOutputs itself (8
// positions) and the SchedulerStats decoding (keyed by name) are the same in every generation.
// Adding a generation is adding its rows to src/protocol/wire_generations.cc and its captures
// under tests/fixtures/wire_generations/ (docs/contributing.md, "Adding a wire generation").
//
// Thread safety: constant tables; read from any thread.
//
// Example:
//   const WireGeneration* g = FindWireGeneration("g20260712");
//   ASSERT_NE(g, nullptr);
//   EXPECT_EQ(g->output_field(10), OutputField::kPrefillStats);
//   EXPECT_NE(FindWireGeneration("0.11.0"), nullptr);  // a vLLM release that pins one
#ifndef VMETRICS_WIRE_GENERATION_H_
#define VMETRICS_WIRE_GENERATION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

namespace vmetrics {

// What one position of an EngineCoreOutput array holds (vllm/v1/engine/__init__.py of each
// generation's commit).
enum class OutputField : uint8_t {
  kRequestId,
  kNewTokenIds,
  kNewLogprobs,
  kNewPromptLogprobsTensors,
  kPoolingOutput,
  kFinishReason,
  kStopReason,
  kEvents,
  kKvTransferParams,
  kEcTransferParams,
  kTraceHeaders,
  kNumCachedTokens,            // up to g20260413: on every output
  kNumExternalComputedTokens,  // g20260413: on every output
  kPrefillStats,               // from g20260712: a map on a request's first output
  kRoutedExperts,
  kNumNansInLogits,
  kMmCacheMissHashes,
  kNewSamplingMask,
  kSpecDecodeMetrics,
  kUnknown,  // a position the generation does not have (an extra trailing one): skipped
};
const char* OutputFieldName(OutputField field);  // "request_id", "prefill_stats", ...

// msgpack types, as a bit set (what a position accepts, what a message carried).
enum WireTypeBit : uint16_t {
  kWireNil = 1 << 0,
  kWireBool = 1 << 1,
  kWireInt = 1 << 2,
  kWireFloat = 1 << 3,
  kWireStr = 1 << 4,
  kWireBin = 1 << 5,
  kWireArray = 1 << 6,
  kWireMap = 1 << 7,
  kWireExt = 1 << 8,
};

// The msgpack types a field accepts (msgspec's rules for its Python type): an Optional field
// accepts nil; an int field refuses nil, so a run of nils stops before it.
constexpr uint16_t AcceptedTypes(OutputField field) {
  switch (field) {
    case OutputField::kRequestId:
      return kWireStr;
    case OutputField::kNewTokenIds:
      return kWireArray;
    case OutputField::kFinishReason:
      return kWireNil | kWireInt;
    case OutputField::kStopReason:
      return kWireNil | kWireInt | kWireStr;
    case OutputField::kKvTransferParams:
    case OutputField::kEcTransferParams:
    case OutputField::kTraceHeaders:
    case OutputField::kPrefillStats:
    case OutputField::kSpecDecodeMetrics:
      return kWireNil | kWireMap;
    case OutputField::kNumCachedTokens:
    case OutputField::kNumExternalComputedTokens:
    case OutputField::kNumNansInLogits:
      return kWireInt;
    case OutputField::kNewLogprobs:
    case OutputField::kNewPromptLogprobsTensors:
    case OutputField::kPoolingOutput:
    case OutputField::kEvents:
    case OutputField::kRoutedExperts:
    case OutputField::kMmCacheMissHashes:
    case OutputField::kNewSamplingMask:
      return kWireNil | kWireArray;
    case OutputField::kUnknown:
      return 0xffff;
  }
  return 0xffff;
}

// One SchedulerStats key of any generation: the dataclass fields of vllm/v1/metrics/stats.py
// (SchedulerStats) over every generation's commit, plus the sleep-telemetry keys of newer
// engines. The enumerators are in the newest declaration order; kStatsKeyRows says what each
// is, and each WireGeneration lists its own keys, in its own order, from this enumeration. The
// decoder (src/protocol/scheduler_stats.cc) switches on these, so a key added here without a
// decision there does not compile.
enum class StatsKey : uint8_t {
  kNumRunningReqs,
  kNumWaitingReqs,
  kNumSkippedWaitingReqs,
  kNumKvFetchReqsByStage,
  kStepCounter,
  kCurrentWave,
  kKvCacheUsage,
  kEncoderCacheUsage,
  kIterationDetails,
  kPrefixCacheStats,
  kConnectorPrefixCacheStats,
  kKvCacheEvictionEvents,
  kSpecDecodingStats,
  kKvConnectorStats,
  kEcConnectorStats,
  kWaitingLoraAdapters,
  kRunningLoraAdapters,
  kCudagraphStats,
  kPerfStats,
  kNumCorruptedReqs,
  kSleepState,
  kSleepStateOnly,
  kUnknown,  // a key no generation has: skipped
};
inline constexpr size_t kStatsKeyCount = static_cast<size_t>(StatsKey::kUnknown);

// What vmetrics does with a SchedulerStats key's value.
enum class StatsKeyUse : uint8_t {
  kDecoded,  // read into SchedulerStats (vmetrics/engine_core_outputs.h)
  kSkipped,  // read past: no family is fed from it
};

// One row of the SchedulerStats field table.
struct StatsKeyRow {
  StatsKey key;
  std::string_view name;         // the map key: the Python field name
  std::string_view python_type;  // as stats.py declares it
  uint16_t accepted;             // WireTypeBit set the decoder takes without a report
  StatsKeyUse use;
};

// The SchedulerStats field table, one row per StatsKey, in StatsKey order (a static_assert in
// wire_generations.cc checks it). Fields added in later generations have defaults, and every
// generation's msgspec writes every field of its dataclass.
inline constexpr StatsKeyRow kStatsKeyRows[] = {
    {StatsKey::kNumRunningReqs, "num_running_reqs", "int", kWireInt, StatsKeyUse::kDecoded},
    {StatsKey::kNumWaitingReqs, "num_waiting_reqs", "int", kWireInt, StatsKeyUse::kDecoded},
    {StatsKey::kNumSkippedWaitingReqs, "num_skipped_waiting_reqs", "int", kWireInt,
     StatsKeyUse::kDecoded},
    {StatsKey::kNumKvFetchReqsByStage, "num_kv_fetch_reqs_by_stage", "dict[str, int]",
     kWireNil | kWireMap, StatsKeyUse::kDecoded},
    {StatsKey::kStepCounter, "step_counter", "int", kWireInt, StatsKeyUse::kDecoded},
    {StatsKey::kCurrentWave, "current_wave", "int", kWireInt, StatsKeyUse::kDecoded},
    {StatsKey::kKvCacheUsage, "kv_cache_usage", "float", kWireFloat | kWireInt,
     StatsKeyUse::kDecoded},
    {StatsKey::kEncoderCacheUsage, "encoder_cache_usage", "float", kWireFloat | kWireInt,
     StatsKeyUse::kSkipped},
    {StatsKey::kIterationDetails, "iteration_details", "SchedulerIterationDetails | None",
     kWireNil | kWireMap, StatsKeyUse::kDecoded},
    {StatsKey::kPrefixCacheStats, "prefix_cache_stats", "PrefixCacheStats", kWireNil | kWireMap,
     StatsKeyUse::kDecoded},
    {StatsKey::kConnectorPrefixCacheStats, "connector_prefix_cache_stats",
     "PrefixCacheStats | None", kWireNil | kWireMap, StatsKeyUse::kDecoded},
    {StatsKey::kKvCacheEvictionEvents, "kv_cache_eviction_events", "list[KVCacheEvictionEvent]",
     kWireNil | kWireArray, StatsKeyUse::kDecoded},
    {StatsKey::kSpecDecodingStats, "spec_decoding_stats", "SpecDecodingStats | None",
     kWireNil | kWireMap, StatsKeyUse::kDecoded},
    {StatsKey::kKvConnectorStats, "kv_connector_stats", "dict[str, Any] | None",
     kWireNil | kWireMap, StatsKeyUse::kDecoded},
    {StatsKey::kEcConnectorStats, "ec_connector_stats", "dict[str, Any] | None",
     kWireNil | kWireMap, StatsKeyUse::kDecoded},
    {StatsKey::kWaitingLoraAdapters, "waiting_lora_adapters", "dict[str, int]", kWireNil | kWireMap,
     StatsKeyUse::kDecoded},
    {StatsKey::kRunningLoraAdapters, "running_lora_adapters", "dict[str, int]", kWireNil | kWireMap,
     StatsKeyUse::kDecoded},
    {StatsKey::kCudagraphStats, "cudagraph_stats", "CUDAGraphStat | None", kWireNil | kWireMap,
     StatsKeyUse::kDecoded},
    {StatsKey::kPerfStats, "perf_stats", "PerfStats | None", kWireNil | kWireMap,
     StatsKeyUse::kDecoded},
    {StatsKey::kNumCorruptedReqs, "num_corrupted_reqs", "int", kWireInt, StatsKeyUse::kSkipped},
    {StatsKey::kSleepState, "sleep_state", "sleep snapshot | None", kWireNil | kWireMap,
     StatsKeyUse::kDecoded},
    {StatsKey::kSleepStateOnly, "sleep_state_only", "bool", kWireBool, StatsKeyUse::kDecoded},
};

constexpr std::string_view StatsKeyName(StatsKey key) {
  return key == StatsKey::kUnknown ? std::string_view("unknown")
                                   : kStatsKeyRows[static_cast<size_t>(key)].name;
}

namespace wire_internal {
// Compares `key` with row I's name, a constant: the length first, then bytes of a known count,
// which the compiler inlines, as it does for a string literal.
template <size_t I>
constexpr bool NameIs(std::string_view key) {
  constexpr std::string_view kName = kStatsKeyRows[I].name;
  return key == kName;
}
// Tries the rows in table order, which is the wire order of the newest generations (msgspec
// writes the keys in declaration order), so a key is usually found after a few length checks.
template <size_t... I>
constexpr StatsKey FindStatsKeyIn(std::string_view key, std::index_sequence<I...> /*rows*/) {
  StatsKey found = StatsKey::kUnknown;
  (void)((NameIs<I>(key) && (found = static_cast<StatsKey>(I), true)) || ...);
  return found;
}
}  // namespace wire_internal

// FindStatsKey
//
// The StatsKey named `key`, or StatsKey::kUnknown.
//
// Example:
//   EXPECT_EQ(FindStatsKey("perf_stats"), StatsKey::kPerfStats);
//   EXPECT_EQ(FindStatsKey("perf_stat"), StatsKey::kUnknown);
constexpr StatsKey FindStatsKey(std::string_view key) {
  return wire_internal::FindStatsKeyIn(key, std::make_index_sequence<kStatsKeyCount>{});
}

// How the engine introduces itself on the input socket (its first frame there, the ready
// response) and on READY.
enum class ReadyForm : uint8_t {
  // An empty first frame; num_gpu_blocks and dp_stats_address travel on READY (before vLLM PR
  // #39102/#39364).
  kEmptyRegistration,
  // {max_model_len, num_gpu_blocks, dp_stats_address}.
  kThreeFields,
  // + block_size, dtype, vllm_version, world_size, data_parallel_size, kv_cache_size_tokens,
  // kv_cache_max_concurrency.
  kWithVersion,
  // + tensor_parallel_size, pipeline_parallel_size, decode_context_parallel_size,
  // data_parallel_rank, max_num_seqs, max_num_batched_tokens, instance_id, kv_events_config.
  kWithParallelism,
};
const char* ReadyFormName(ReadyForm form);

// new_logprobs (position 2): a list triple, a list quadruple (a 4th list of ints or nil), or
// ndarray triples in the first three places of a quadruple.
enum class LogprobsForm : uint8_t { kListTriple, kListQuadruple, kTensors };

// What one position of an EngineCoreRequest array holds, the body of an ADD
// (vllm/v1/engine/__init__.py of each generation's commit). Every position is written
// (array_like); msgspec fills missing trailing positions that have a default and refuses a
// shorter array otherwise, ignores extra trailing positions, and refuses a value of the wrong
// type, which ends a vLLM engine's input thread (docs/wire_format.md, "Requests").
enum class RequestField : uint8_t {
  kRequestId,
  kPromptTokenIds,
  kMmFeatures,
  kSamplingParams,
  kPoolingParams,
  kEosTokenId,  // up to g20260204; later generations carry EOS in SamplingParams._eos_token_id
  kArrivalTime,
  kLoraRequest,
  kCacheSalt,
  kDataParallelRank,
  kPromptEmbeds,
  kPromptIsTokenIds,
  kClientIndex,
  kCurrentWave,
  kPriority,
  kTraceHeaders,
  kResumable,
  kExternalReqId,
  kReasoningEnded,
  kReasoningParserKwargs,
  kAbortImmediately,
  kSessionId,
};
const char* RequestFieldName(RequestField field);  // "request_id", "eos_token_id", ...

// The msgpack types a request position accepts (msgspec's rules for its Python type).
constexpr uint16_t AcceptedTypes(RequestField field) {
  switch (field) {
    case RequestField::kRequestId:
      return kWireStr;
    case RequestField::kArrivalTime:
      return kWireFloat | kWireInt;  // msgspec takes an int for a float
    case RequestField::kClientIndex:
    case RequestField::kCurrentWave:
    case RequestField::kPriority:
      return kWireInt;
    case RequestField::kResumable:
    case RequestField::kAbortImmediately:
      return kWireBool;
    case RequestField::kEosTokenId:
    case RequestField::kDataParallelRank:
      return kWireNil | kWireInt;
    case RequestField::kCacheSalt:
    case RequestField::kExternalReqId:
    case RequestField::kSessionId:
      return kWireNil | kWireStr;
    case RequestField::kReasoningEnded:
      return kWireNil | kWireBool;
    case RequestField::kSamplingParams:
    case RequestField::kPoolingParams:
    case RequestField::kTraceHeaders:
    case RequestField::kReasoningParserKwargs:
      return kWireNil | kWireMap;
    case RequestField::kPromptTokenIds:
    case RequestField::kMmFeatures:
    case RequestField::kLoraRequest:
    case RequestField::kPromptIsTokenIds:
      return kWireNil | kWireArray;
    case RequestField::kPromptEmbeds:
      return kWireNil | kWireArray | kWireExt | kWireBin;  // a tensor
  }
  return 0;
}

// What one position of a LoRARequest array holds (vllm/lora/request.py).
enum class LoraField : uint8_t {
  kLoraName,
  kLoraIntId,
  kLoraPath,
  kLoraLocalPath,   // up to g20251105
  kLongLoraMaxLen,  // up to g20251105
  kBaseModelName,
  kTensorizerConfigDict,
  kLoadInplace,     // from g20260204
  kIs3dLoraWeight,  // from g20260712
};
const char* LoraFieldName(LoraField field);
constexpr uint16_t AcceptedTypes(LoraField field) {
  switch (field) {
    case LoraField::kLoraName:
    case LoraField::kLoraPath:
      return kWireStr;
    case LoraField::kLoraIntId:
      return kWireInt;
    case LoraField::kLoraLocalPath:
    case LoraField::kBaseModelName:
      return kWireNil | kWireStr;
    case LoraField::kLongLoraMaxLen:
      return kWireNil | kWireInt;
    case LoraField::kTensorizerConfigDict:
      return kWireNil | kWireMap;
    case LoraField::kLoadInplace:
    case LoraField::kIs3dLoraWeight:
      return kWireBool;
  }
  return 0;
}

// Every SamplingParams key of any generation (vllm/sampling_params.py), in the newest
// definition order. SamplingParams is a map (omit_defaults): every key is optional, and an
// engine ignores a key its generation does not define, so a key must never be relied on where
// the engine's generation does not list it.
enum class SamplingKey : uint8_t {
  kN,
  kBestOf,  // up to g20251105
  kRealN,   // up to g20251105
  kPresencePenalty,
  kFrequencyPenalty,
  kRepetitionPenalty,
  kTemperature,
  kTopP,
  kTopK,
  kMinP,
  kSeed,
  kStop,
  kStopTokenIds,
  kIgnoreEos,
  kMaxTokens,
  kMinTokens,
  kLogprobs,
  kPromptLogprobs,
  kLogprobTokenIds,  // from g20260413
  kFlatLogprobs,     // from g20260112
  kDetokenize,
  kSkipSpecialTokens,
  kSpacesBetweenSpecialTokens,
  kLogitsProcessors,  // up to g20260204
  kIncludeStopStrInOutput,
  kTruncatePromptTokens,  // up to g20260204
  kOutputKind,
  kStreamInterval,  // from g20260812
  kSkipClone,       // from g20260112
  kOutputTextBufferLength,
  kEosTokenId,  // `_eos_token_id`, from g20260413
  kAllStopTokenIds,
  kStructuredOutputs,
  kGuidedDecoding,  // up to g20251105
  kLogitBias,
  kAllowedTokenIds,
  kExtraArgs,
  kRoutedExpertsPromptStart,  // from g20260712
  kBadWords,
  kBadWordsTokenIds,
  kSkipReadingPrefixCache,  // from g20260112
  kThinkingTokenBudget,     // from g20260413
  kRepetitionDetection,     // from g20260413
};
const char* SamplingKeyName(SamplingKey key);  // the map key: "n", "_eos_token_id", ...

// The layout of an ADD body in one generation.
struct RequestLayout {
  std::span<const RequestField> fields;   // EngineCoreRequest, position by position
  uint8_t required = 0;                   // positions without a default: [0, required)
  std::span<const LoraField> lora;        // LoRARequest, position by position
  uint8_t lora_required = 2;              // lora_name, lora_int_id
  std::span<const SamplingKey> sampling;  // the SamplingParams keys, in definition order

  // The position of `field`, or -1.
  int PositionOf(RequestField field) const;
  bool Has(SamplingKey key) const;
};

// The engine's UTILITY methods the control routes call (EngineCore in vllm/v1/engine/core.py
// at the generation's commit; docs/wire_format.md, "Utility calls"). Every generation has
// sleep(level), wake_up(tags), is_sleeping() and reset_prefix_cache.
struct EngineControlCalls {
  // sleep(level, mode), the engine pausing its scheduler by `mode` first; before: sleep(level),
  // which vLLM's frontend preceded with reset_prefix_cache() (AsyncLLM.sleep).
  bool sleep_takes_mode = true;
  // pause_scheduler(mode, clear_cache), resume_scheduler(), is_scheduler_paused(); before,
  // vLLM paused in its frontend (or not at all), which vmetrics does not do.
  bool pause_scheduler = true;
  // reset_prefix_cache(reset_running_requests, reset_connector) -> bool; before:
  // reset_prefix_cache() -> None.
  bool reset_prefix_cache_flags = true;
  // The workers' weight-transfer methods, reached through EngineCore.collective_rpc(method,
  // timeout, args, kwargs) (vllm/v1/worker/gpu_worker.py): 0 none; 1 init_weight_transfer_engine
  // and update_weights (from g20260413); 2 also start_weight_update, start_draft_weight_update
  // and finish_weight_update (from g20260712).
  uint8_t weight_transfer = 2;
  // EngineCore.set_weight_version(str) and get_weight_version() (from g20260812).
  bool weight_version = true;
  bool operator==(const EngineControlCalls&) const = default;
};

inline constexpr size_t kMaxOutputPositions = 24;
inline constexpr uint8_t kNilRunToTheEnd = 0xff;  // WireGeneration::nil_run_end: no stop

struct WireGeneration {
  std::string_view name;        // "g20260814-6adad087"
  std::string_view commit;      // the representative vllm-project/vllm commit; "" if none pinned
  std::string_view span_first;  // first day on main, "2026-08-12"
  std::string_view span_last;   // last day on main
  // EngineCoreOutput, position by position.
  std::array<OutputField, kMaxOutputPositions> output{};
  uint8_t output_count = 0;
  // For position p: the first position at or after p whose field does not accept nil, or
  // kNilRunToTheEnd when there is none (and for every p past the generation's positions): a run
  // of nils may be skipped up to it, since nil leaves every field before it at its default.
  // Filled by MakeWireGeneration. The decoder needs no bounds check beyond p < its size.
  std::array<uint8_t, kMaxOutputPositions + 1> nil_run_end{};
  // SchedulerStats keys, in declaration order (msgspec writes them all).
  std::span<const StatsKey> scheduler_stats_keys;
  uint8_t prefix_cache_stats_keys = 0;   // PrefixCacheStats (and the connector's)
  uint8_t spec_decoding_stats_keys = 0;  // SpecDecodingStats
  uint8_t prefill_stats_keys = 0;        // PrefillStats; 0 = the generation has none
  uint8_t nixl_keys = 0;                 // a NIXL kv_connector_stats payload
  bool nixl_failures_are_ints = false;   // failure list entries: int 1 (else float 1.0)
  uint8_t max_finish_reason = 0;         // 2 abort, 3 error, 4 repetition
  LogprobsForm logprobs = LogprobsForm::kTensors;
  ReadyForm ready_form = ReadyForm::kWithParallelism;
  // vLLM releases built from this span (docs/wire_format.md says how each was pinned).
  std::span<const std::string_view> vllm_releases;
  // What the frontend sends: the ADD body's layout, and the UTILITY calls' signatures.
  RequestLayout request;
  EngineControlCalls control;

  OutputField output_field(size_t position) const {
    return position < output_count ? output[position] : OutputField::kUnknown;
  }
  // The position of `field`, or -1.
  int PositionOf(OutputField field) const;
};

// Every generation vmetrics knows, oldest first. The last one is the newest.
std::span<const WireGeneration> WireGenerations();
const WireGeneration& NewestWireGeneration();

// The generation named `name` ("g20260712-370b678a", or the part before the dash,
// "g20260712"), or pinned by a vLLM release ("0.11.0", "v0.11.0"); nullptr if none.
const WireGeneration* FindWireGeneration(std::string_view name_or_release);

// The generation a vLLM version string pins, if any: a release listed in a table, or a source
// build whose version names a representative commit (`0.1.dev5+g6adad0876`). nullptr for
// anything else ("dev", an unknown release).
const WireGeneration* WireGenerationOfVllmVersion(std::string_view vllm_version);

// True when a and b decode every message the same way: their EngineCoreOutput layouts agree on
// every position both have (one is a prefix of the other). SchedulerStats decoding is keyed by
// name and the same in all generations.
bool LayoutsAgree(const WireGeneration& a, const WireGeneration& b);

// Index of `g` in WireGenerations().
size_t WireGenerationIndex(const WireGeneration& g);

}  // namespace vmetrics

#endif  // VMETRICS_WIRE_GENERATION_H_
