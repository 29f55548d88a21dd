// SPDX-License-Identifier: Apache-2.0
// The wire generations, one table each (wire_generation.h). Every fact here was read from
// vllm-project/vllm at the generation's representative commit (vllm/v1/engine/__init__.py,
// vllm/v1/metrics/stats.py, the NIXL stats class, vllm/v1/engine/core.py for the ready
// response) and checked against that generation's captures in tests/fixtures/wire_generations/
// (WireGenerations.TablesMatchTheCaptureManifest). docs/wire_format.md's tables and
// tests/fixtures/wire_layouts.json (the Python generators' layouts) are generated from these
// (`vmetrics wire-reference`, tools/regen_docs.sh).
#include <algorithm>
#include <initializer_list>

#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using F = OutputField;

constexpr WireGeneration MakeWireGeneration(WireGeneration g, std::initializer_list<F> fields) {
  g.output.fill(F::kUnknown);  // positions past the generation's: skipped
  for (F f : fields) g.output[g.output_count++] = f;
  g.nil_run_end.fill(kNilRunToTheEnd);
  for (size_t p = g.output_count; p-- > 0;) {
    g.nil_run_end[p] = (AcceptedTypes(g.output[p]) & kWireNil) != 0 ? g.nil_run_end[p + 1]
                                                                    : static_cast<uint8_t>(p);
  }
  return g;
}

// Positions 0-8 of EngineCoreOutput never changed in the window.
#define VMETRICS_OUTPUT_0_TO_8                                                   \
  F::kRequestId, F::kNewTokenIds, F::kNewLogprobs, F::kNewPromptLogprobsTensors, \
      F::kPoolingOutput, F::kFinishReason, F::kStopReason, F::kEvents, F::kKvTransferParams

// SchedulerStats keys, in declaration order (vllm/v1/metrics/stats.py at the generation's
// commit); what each key is: kStatsKeyRows (wire_generation.h).
using K = StatsKey;
constexpr K kStats20250927[] = {K::kNumRunningReqs,    K::kNumWaitingReqs,   K::kStepCounter,
                                K::kCurrentWave,       K::kKvCacheUsage,     K::kPrefixCacheStats,
                                K::kSpecDecodingStats, K::kKvConnectorStats, K::kNumCorruptedReqs};
constexpr K kStats20251105[] = {K::kNumRunningReqs,
                                K::kNumWaitingReqs,
                                K::kStepCounter,
                                K::kCurrentWave,
                                K::kKvCacheUsage,
                                K::kPrefixCacheStats,
                                K::kConnectorPrefixCacheStats,
                                K::kSpecDecodingStats,
                                K::kKvConnectorStats,
                                K::kNumCorruptedReqs};
constexpr K kStats20260112[] = {K::kNumRunningReqs,
                                K::kNumWaitingReqs,
                                K::kStepCounter,
                                K::kCurrentWave,
                                K::kKvCacheUsage,
                                K::kPrefixCacheStats,
                                K::kConnectorPrefixCacheStats,
                                K::kKvCacheEvictionEvents,
                                K::kSpecDecodingStats,
                                K::kKvConnectorStats,
                                K::kWaitingLoraAdapters,
                                K::kRunningLoraAdapters,
                                K::kCudagraphStats,
                                K::kPerfStats};
constexpr K kStats20260204[] = {K::kNumRunningReqs,
                                K::kNumWaitingReqs,
                                K::kStepCounter,
                                K::kCurrentWave,
                                K::kKvCacheUsage,
                                K::kEncoderCacheUsage,
                                K::kPrefixCacheStats,
                                K::kConnectorPrefixCacheStats,
                                K::kKvCacheEvictionEvents,
                                K::kSpecDecodingStats,
                                K::kKvConnectorStats,
                                K::kWaitingLoraAdapters,
                                K::kRunningLoraAdapters,
                                K::kCudagraphStats,
                                K::kPerfStats};
constexpr K kStats20260712[] = {K::kNumRunningReqs,
                                K::kNumWaitingReqs,
                                K::kNumSkippedWaitingReqs,
                                K::kStepCounter,
                                K::kCurrentWave,
                                K::kKvCacheUsage,
                                K::kPrefixCacheStats,
                                K::kConnectorPrefixCacheStats,
                                K::kKvCacheEvictionEvents,
                                K::kSpecDecodingStats,
                                K::kKvConnectorStats,
                                K::kWaitingLoraAdapters,
                                K::kRunningLoraAdapters,
                                K::kCudagraphStats,
                                K::kPerfStats};
constexpr K kStats20260812[] = {K::kNumRunningReqs,
                                K::kNumWaitingReqs,
                                K::kNumSkippedWaitingReqs,
                                K::kStepCounter,
                                K::kCurrentWave,
                                K::kKvCacheUsage,
                                K::kIterationDetails,
                                K::kPrefixCacheStats,
                                K::kConnectorPrefixCacheStats,
                                K::kKvCacheEvictionEvents,
                                K::kSpecDecodingStats,
                                K::kKvConnectorStats,
                                K::kWaitingLoraAdapters,
                                K::kRunningLoraAdapters,
                                K::kCudagraphStats,
                                K::kPerfStats};
constexpr K kStatsNewest[] = {K::kNumRunningReqs,        K::kNumWaitingReqs,
                              K::kNumSkippedWaitingReqs, K::kNumKvFetchReqsByStage,
                              K::kStepCounter,           K::kCurrentWave,
                              K::kKvCacheUsage,          K::kIterationDetails,
                              K::kPrefixCacheStats,      K::kConnectorPrefixCacheStats,
                              K::kKvCacheEvictionEvents, K::kSpecDecodingStats,
                              K::kKvConnectorStats,      K::kEcConnectorStats,
                              K::kWaitingLoraAdapters,   K::kRunningLoraAdapters,
                              K::kCudagraphStats,        K::kPerfStats};

// Every row of kStatsKeyRows is at its enumerator's index and found by its name (no two rows
// share one): the decoder's dispatch (FindStatsKey) and StatsKeyName read the table by index.
constexpr bool StatsKeyRowsAreConsistent() {
  if (std::size(kStatsKeyRows) != kStatsKeyCount) return false;
  for (size_t i = 0; i < std::size(kStatsKeyRows); ++i) {
    const StatsKeyRow& row = kStatsKeyRows[i];
    if (static_cast<size_t>(row.key) != i || FindStatsKey(row.name) != row.key) return false;
  }
  return true;
}
static_assert(StatsKeyRowsAreConsistent());

// EngineCoreRequest positions (vllm/v1/engine/__init__.py), LoRARequest positions
// (vllm/lora/request.py) and SamplingParams keys in definition order (vllm/sampling_params.py),
// each at the generation's commit.
using R = RequestField;
using L = LoraField;
using S = SamplingKey;

constexpr R kRequest20250927[] = {
    R::kRequestId,    R::kPromptTokenIds, R::kMmFeatures,  R::kSamplingParams, R::kPoolingParams,
    R::kEosTokenId,   R::kArrivalTime,    R::kLoraRequest, R::kCacheSalt,      R::kDataParallelRank,
    R::kPromptEmbeds, R::kClientIndex,    R::kCurrentWave, R::kPriority,       R::kTraceHeaders};
constexpr R kRequest20260112[] = {
    R::kRequestId,     R::kPromptTokenIds,   R::kMmFeatures,   R::kSamplingParams,
    R::kPoolingParams, R::kEosTokenId,       R::kArrivalTime,  R::kLoraRequest,
    R::kCacheSalt,     R::kDataParallelRank, R::kPromptEmbeds, R::kClientIndex,
    R::kCurrentWave,   R::kPriority,         R::kTraceHeaders, R::kExternalReqId};
constexpr R kRequest20260204[] = {
    R::kRequestId,    R::kPromptTokenIds, R::kMmFeatures,  R::kSamplingParams, R::kPoolingParams,
    R::kEosTokenId,   R::kArrivalTime,    R::kLoraRequest, R::kCacheSalt,      R::kDataParallelRank,
    R::kPromptEmbeds, R::kClientIndex,    R::kCurrentWave, R::kPriority,       R::kTraceHeaders,
    R::kResumable,    R::kExternalReqId};
constexpr R kRequest20260413[] = {
    R::kRequestId,     R::kPromptTokenIds, R::kMmFeatures, R::kSamplingParams,   R::kPoolingParams,
    R::kArrivalTime,   R::kLoraRequest,    R::kCacheSalt,  R::kDataParallelRank, R::kPromptEmbeds,
    R::kClientIndex,   R::kCurrentWave,    R::kPriority,   R::kTraceHeaders,     R::kResumable,
    R::kExternalReqId, R::kReasoningEnded};
constexpr R kRequest20260712[] = {R::kRequestId,
                                  R::kPromptTokenIds,
                                  R::kMmFeatures,
                                  R::kSamplingParams,
                                  R::kPoolingParams,
                                  R::kArrivalTime,
                                  R::kLoraRequest,
                                  R::kCacheSalt,
                                  R::kDataParallelRank,
                                  R::kPromptEmbeds,
                                  R::kPromptIsTokenIds,
                                  R::kClientIndex,
                                  R::kCurrentWave,
                                  R::kPriority,
                                  R::kTraceHeaders,
                                  R::kResumable,
                                  R::kExternalReqId,
                                  R::kReasoningEnded,
                                  R::kReasoningParserKwargs,
                                  R::kAbortImmediately};
constexpr R kRequest20260812[] = {R::kRequestId,
                                  R::kPromptTokenIds,
                                  R::kMmFeatures,
                                  R::kSamplingParams,
                                  R::kPoolingParams,
                                  R::kArrivalTime,
                                  R::kLoraRequest,
                                  R::kCacheSalt,
                                  R::kDataParallelRank,
                                  R::kPromptEmbeds,
                                  R::kPromptIsTokenIds,
                                  R::kClientIndex,
                                  R::kCurrentWave,
                                  R::kPriority,
                                  R::kTraceHeaders,
                                  R::kResumable,
                                  R::kExternalReqId,
                                  R::kReasoningEnded,
                                  R::kReasoningParserKwargs,
                                  R::kAbortImmediately,
                                  R::kSessionId};

constexpr L kLora20250927[] = {
    L::kLoraName,      L::kLoraIntId,           L::kLoraPath, L::kLoraLocalPath, L::kLongLoraMaxLen,
    L::kBaseModelName, L::kTensorizerConfigDict};
constexpr L kLora20260112[] = {L::kLoraName, L::kLoraIntId, L::kLoraPath, L::kBaseModelName,
                               L::kTensorizerConfigDict};
constexpr L kLora20260204[] = {
    L::kLoraName,   L::kLoraIntId, L::kLoraPath, L::kBaseModelName, L::kTensorizerConfigDict,
    L::kLoadInplace};
constexpr L kLora20260712[] = {
    L::kLoraName,    L::kLoraIntId,     L::kLoraPath, L::kBaseModelName, L::kTensorizerConfigDict,
    L::kLoadInplace, L::kIs3dLoraWeight};

constexpr S kSampling20250927[] = {S::kN,
                                   S::kBestOf,
                                   S::kRealN,
                                   S::kPresencePenalty,
                                   S::kFrequencyPenalty,
                                   S::kRepetitionPenalty,
                                   S::kTemperature,
                                   S::kTopP,
                                   S::kTopK,
                                   S::kMinP,
                                   S::kSeed,
                                   S::kStop,
                                   S::kStopTokenIds,
                                   S::kIgnoreEos,
                                   S::kMaxTokens,
                                   S::kMinTokens,
                                   S::kLogprobs,
                                   S::kPromptLogprobs,
                                   S::kDetokenize,
                                   S::kSkipSpecialTokens,
                                   S::kSpacesBetweenSpecialTokens,
                                   S::kLogitsProcessors,
                                   S::kIncludeStopStrInOutput,
                                   S::kTruncatePromptTokens,
                                   S::kOutputKind,
                                   S::kOutputTextBufferLength,
                                   S::kAllStopTokenIds,
                                   S::kStructuredOutputs,
                                   S::kGuidedDecoding,
                                   S::kLogitBias,
                                   S::kAllowedTokenIds,
                                   S::kExtraArgs,
                                   S::kBadWords,
                                   S::kBadWordsTokenIds};
constexpr S kSampling20260112[] = {S::kN,
                                   S::kPresencePenalty,
                                   S::kFrequencyPenalty,
                                   S::kRepetitionPenalty,
                                   S::kTemperature,
                                   S::kTopP,
                                   S::kTopK,
                                   S::kMinP,
                                   S::kSeed,
                                   S::kStop,
                                   S::kStopTokenIds,
                                   S::kIgnoreEos,
                                   S::kMaxTokens,
                                   S::kMinTokens,
                                   S::kLogprobs,
                                   S::kPromptLogprobs,
                                   S::kFlatLogprobs,
                                   S::kDetokenize,
                                   S::kSkipSpecialTokens,
                                   S::kSpacesBetweenSpecialTokens,
                                   S::kLogitsProcessors,
                                   S::kIncludeStopStrInOutput,
                                   S::kTruncatePromptTokens,
                                   S::kOutputKind,
                                   S::kSkipClone,
                                   S::kOutputTextBufferLength,
                                   S::kAllStopTokenIds,
                                   S::kStructuredOutputs,
                                   S::kLogitBias,
                                   S::kAllowedTokenIds,
                                   S::kExtraArgs,
                                   S::kBadWords,
                                   S::kBadWordsTokenIds,
                                   S::kSkipReadingPrefixCache};
constexpr S kSampling20260413[] = {S::kN,
                                   S::kPresencePenalty,
                                   S::kFrequencyPenalty,
                                   S::kRepetitionPenalty,
                                   S::kTemperature,
                                   S::kTopP,
                                   S::kTopK,
                                   S::kMinP,
                                   S::kSeed,
                                   S::kStop,
                                   S::kStopTokenIds,
                                   S::kIgnoreEos,
                                   S::kMaxTokens,
                                   S::kMinTokens,
                                   S::kLogprobs,
                                   S::kPromptLogprobs,
                                   S::kLogprobTokenIds,
                                   S::kFlatLogprobs,
                                   S::kDetokenize,
                                   S::kSkipSpecialTokens,
                                   S::kSpacesBetweenSpecialTokens,
                                   S::kIncludeStopStrInOutput,
                                   S::kOutputKind,
                                   S::kSkipClone,
                                   S::kOutputTextBufferLength,
                                   S::kEosTokenId,
                                   S::kAllStopTokenIds,
                                   S::kStructuredOutputs,
                                   S::kLogitBias,
                                   S::kAllowedTokenIds,
                                   S::kExtraArgs,
                                   S::kBadWords,
                                   S::kBadWordsTokenIds,
                                   S::kSkipReadingPrefixCache,
                                   S::kThinkingTokenBudget,
                                   S::kRepetitionDetection};
constexpr S kSampling20260712[] = {S::kN,
                                   S::kPresencePenalty,
                                   S::kFrequencyPenalty,
                                   S::kRepetitionPenalty,
                                   S::kTemperature,
                                   S::kTopP,
                                   S::kTopK,
                                   S::kMinP,
                                   S::kSeed,
                                   S::kStop,
                                   S::kStopTokenIds,
                                   S::kIgnoreEos,
                                   S::kMaxTokens,
                                   S::kMinTokens,
                                   S::kLogprobs,
                                   S::kPromptLogprobs,
                                   S::kLogprobTokenIds,
                                   S::kFlatLogprobs,
                                   S::kDetokenize,
                                   S::kSkipSpecialTokens,
                                   S::kSpacesBetweenSpecialTokens,
                                   S::kIncludeStopStrInOutput,
                                   S::kOutputKind,
                                   S::kSkipClone,
                                   S::kOutputTextBufferLength,
                                   S::kEosTokenId,
                                   S::kAllStopTokenIds,
                                   S::kStructuredOutputs,
                                   S::kLogitBias,
                                   S::kAllowedTokenIds,
                                   S::kExtraArgs,
                                   S::kRoutedExpertsPromptStart,
                                   S::kBadWords,
                                   S::kBadWordsTokenIds,
                                   S::kSkipReadingPrefixCache,
                                   S::kThinkingTokenBudget,
                                   S::kRepetitionDetection};
constexpr S kSampling20260812[] = {S::kN,
                                   S::kPresencePenalty,
                                   S::kFrequencyPenalty,
                                   S::kRepetitionPenalty,
                                   S::kTemperature,
                                   S::kTopP,
                                   S::kTopK,
                                   S::kMinP,
                                   S::kSeed,
                                   S::kStop,
                                   S::kStopTokenIds,
                                   S::kIgnoreEos,
                                   S::kMaxTokens,
                                   S::kMinTokens,
                                   S::kLogprobs,
                                   S::kPromptLogprobs,
                                   S::kLogprobTokenIds,
                                   S::kFlatLogprobs,
                                   S::kDetokenize,
                                   S::kSkipSpecialTokens,
                                   S::kSpacesBetweenSpecialTokens,
                                   S::kIncludeStopStrInOutput,
                                   S::kOutputKind,
                                   S::kStreamInterval,
                                   S::kSkipClone,
                                   S::kOutputTextBufferLength,
                                   S::kEosTokenId,
                                   S::kAllStopTokenIds,
                                   S::kStructuredOutputs,
                                   S::kLogitBias,
                                   S::kAllowedTokenIds,
                                   S::kExtraArgs,
                                   S::kRoutedExpertsPromptStart,
                                   S::kBadWords,
                                   S::kBadWordsTokenIds,
                                   S::kSkipReadingPrefixCache,
                                   S::kThinkingTokenBudget,
                                   S::kRepetitionDetection};

// EngineCoreRequest positions 0-9 have no default up to g20260204 (eos_token_id at 5), 0-8
// after.
constexpr RequestLayout kRequests20250927{.fields = kRequest20250927,
                                          .required = 10,
                                          .lora = kLora20250927,
                                          .sampling = kSampling20250927};
constexpr RequestLayout kRequests20260112{.fields = kRequest20260112,
                                          .required = 10,
                                          .lora = kLora20260112,
                                          .sampling = kSampling20260112};
constexpr RequestLayout kRequests20260204{.fields = kRequest20260204,
                                          .required = 10,
                                          .lora = kLora20260204,
                                          .sampling = kSampling20260112};
constexpr RequestLayout kRequests20260413{.fields = kRequest20260413,
                                          .required = 9,
                                          .lora = kLora20260204,
                                          .sampling = kSampling20260413};
constexpr RequestLayout kRequests20260712{.fields = kRequest20260712,
                                          .required = 9,
                                          .lora = kLora20260712,
                                          .sampling = kSampling20260712};
constexpr RequestLayout kRequests20260812{.fields = kRequest20260812,
                                          .required = 9,
                                          .lora = kLora20260712,
                                          .sampling = kSampling20260812};

// The UTILITY signatures (EngineCore at each commit): pause_scheduler and sleep(level, mode)
// from f72b2097, reset_prefix_cache's two flags from 0565f1fd, the workers'
// weight transfer from f72b2097 (its start and finish from 370b678a), the weight version from
// f4e9bb01.
constexpr EngineControlCalls kControl20250927{.sleep_takes_mode = false,
                                              .pause_scheduler = false,
                                              .reset_prefix_cache_flags = false,
                                              .weight_transfer = 0,
                                              .weight_version = false};
constexpr EngineControlCalls kControl20260112{.sleep_takes_mode = false,
                                              .pause_scheduler = false,
                                              .reset_prefix_cache_flags = true,
                                              .weight_transfer = 0,
                                              .weight_version = false};
constexpr EngineControlCalls kControl20260413{.weight_transfer = 1, .weight_version = false};
constexpr EngineControlCalls kControl20260712{.weight_transfer = 2, .weight_version = false};

// vLLM releases whose wire is a generation's (docs/wire_format.md, "vLLM releases").
constexpr std::string_view kReleasesNone[] = {""};

constexpr WireGeneration kGenerations[] = {
    MakeWireGeneration({.name = "g20250927-6f5c0931",
                        .commit = "6f5c0931c1f618b2ca8668d114fec2d26cecfd8c",
                        .span_first = "2025-09-19",
                        .span_last = "2025-09-26",
                        .scheduler_stats_keys = kStats20250927,
                        .prefix_cache_stats_keys = 4,
                        .spec_decoding_stats_keys = 5,
                        .prefill_stats_keys = 0,
                        .nixl_keys = 1,
                        .nixl_failures_are_ints = false,
                        .max_finish_reason = 2,
                        .logprobs = LogprobsForm::kListTriple,
                        .ready_form = ReadyForm::kEmptyRegistration,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20250927,
                        .control = kControl20250927},
                       {VMETRICS_OUTPUT_0_TO_8, F::kTraceHeaders, F::kNumCachedTokens}),
    MakeWireGeneration({.name = "g20251105-65ac8d8d",
                        .commit = "65ac8d8dc474839eafaea2adddb76fd2341cb78d",
                        .span_first = "2025-09-27",
                        .span_last = "2025-11-04",
                        .scheduler_stats_keys = kStats20251105,
                        .prefix_cache_stats_keys = 7,
                        .spec_decoding_stats_keys = 5,
                        .prefill_stats_keys = 0,
                        .nixl_keys = 6,
                        .nixl_failures_are_ints = false,
                        .max_finish_reason = 2,
                        .logprobs = LogprobsForm::kListQuadruple,
                        .ready_form = ReadyForm::kEmptyRegistration,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20250927,
                        .control = kControl20250927},
                       {VMETRICS_OUTPUT_0_TO_8, F::kTraceHeaders, F::kNumCachedTokens}),
    MakeWireGeneration(
        {.name = "g20260112-0565f1fd",
         .commit = "0565f1fdec86dd0f38438d50db2219246f0e196d",
         .span_first = "2025-11-05",
         .span_last = "2026-01-11",
         .scheduler_stats_keys = kStats20260112,
         .prefix_cache_stats_keys = 7,
         .spec_decoding_stats_keys = 5,
         .prefill_stats_keys = 0,
         .nixl_keys = 6,
         .nixl_failures_are_ints = false,
         .max_finish_reason = 3,
         .logprobs = LogprobsForm::kTensors,
         .ready_form = ReadyForm::kEmptyRegistration,
         .vllm_releases = kReleasesNone,
         .request = kRequests20260112,
         .control = kControl20260112},
        {VMETRICS_OUTPUT_0_TO_8, F::kTraceHeaders, F::kNumCachedTokens, F::kNumNansInLogits}),
    MakeWireGeneration({.name = "g20260204-08e09499",
                        .commit = "08e094997ecb28b4c5ad4dd28fd6fbb48adba279",
                        .span_first = "2026-01-12",
                        .span_last = "2026-02-03",
                        .scheduler_stats_keys = kStats20260204,
                        .prefix_cache_stats_keys = 7,
                        .spec_decoding_stats_keys = 5,
                        .prefill_stats_keys = 0,
                        .nixl_keys = 7,
                        .nixl_failures_are_ints = true,
                        .max_finish_reason = 3,
                        .logprobs = LogprobsForm::kTensors,
                        .ready_form = ReadyForm::kEmptyRegistration,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20260204,
                        .control = kControl20260112},
                       {VMETRICS_OUTPUT_0_TO_8, F::kTraceHeaders, F::kNumCachedTokens,
                        F::kRoutedExperts, F::kNumNansInLogits}),
    MakeWireGeneration({.name = "g20260413-f72b2097",
                        .commit = "f72b20976c49f5cc522281b59df4863cabed8df2",
                        .span_first = "2026-02-04",
                        .span_last = "2026-04-12",
                        .scheduler_stats_keys = kStats20260204,
                        .prefix_cache_stats_keys = 7,
                        .spec_decoding_stats_keys = 5,
                        .prefill_stats_keys = 0,
                        .nixl_keys = 7,
                        .nixl_failures_are_ints = true,
                        .max_finish_reason = 4,
                        .logprobs = LogprobsForm::kTensors,
                        .ready_form = ReadyForm::kThreeFields,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20260413,
                        .control = kControl20260413},
                       {VMETRICS_OUTPUT_0_TO_8, F::kTraceHeaders, F::kNumCachedTokens,
                        F::kNumExternalComputedTokens, F::kRoutedExperts, F::kNumNansInLogits}),
    MakeWireGeneration({.name = "g20260712-370b678a",
                        .commit = "370b678a028872e7c7def9aa18cfef3ab1fa750e",
                        .span_first = "2026-04-13",
                        .span_last = "2026-07-11",
                        .scheduler_stats_keys = kStats20260712,
                        .prefix_cache_stats_keys = 7,
                        .spec_decoding_stats_keys = 6,
                        .prefill_stats_keys = 5,
                        .nixl_keys = 7,
                        .nixl_failures_are_ints = true,
                        .max_finish_reason = 4,
                        .logprobs = LogprobsForm::kTensors,
                        .ready_form = ReadyForm::kWithVersion,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20260712,
                        .control = kControl20260712},
                       {VMETRICS_OUTPUT_0_TO_8, F::kTraceHeaders, F::kPrefillStats,
                        F::kRoutedExperts, F::kNumNansInLogits}),
    MakeWireGeneration({.name = "g20260812-f4e9bb01",
                        .commit = "f4e9bb01de39dda517c8555640696bd9a9758be2",
                        .span_first = "2026-07-12",
                        .span_last = "2026-08-11",
                        .scheduler_stats_keys = kStats20260812,
                        .prefix_cache_stats_keys = 7,
                        .spec_decoding_stats_keys = 6,
                        .prefill_stats_keys = 6,
                        .nixl_keys = 7,
                        .nixl_failures_are_ints = true,
                        .max_finish_reason = 4,
                        .logprobs = LogprobsForm::kTensors,
                        .ready_form = ReadyForm::kWithParallelism,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20260812},
                       {VMETRICS_OUTPUT_0_TO_8, F::kEcTransferParams, F::kTraceHeaders,
                        F::kPrefillStats, F::kRoutedExperts, F::kNumNansInLogits}),
    MakeWireGeneration(
        {.name = "g20260814-6adad087",
         .commit = "6adad08767583f52eb4d2122111af0bf638ed5e6",
         .span_first = "2026-08-12",
         .span_last = "2026-08-14",
         .scheduler_stats_keys = kStats20260812,
         .prefix_cache_stats_keys = 7,
         .spec_decoding_stats_keys = 6,
         .prefill_stats_keys = 6,
         .nixl_keys = 7,
         .nixl_failures_are_ints = true,
         .max_finish_reason = 4,
         .logprobs = LogprobsForm::kTensors,
         .ready_form = ReadyForm::kWithParallelism,
         .vllm_releases = kReleasesNone,
         .request = kRequests20260812},
        {VMETRICS_OUTPUT_0_TO_8, F::kEcTransferParams, F::kTraceHeaders, F::kPrefillStats,
         F::kRoutedExperts, F::kNumNansInLogits, F::kMmCacheMissHashes, F::kNewSamplingMask}),
    // No upstream main commit carrying every change of this layout could be pinned: named
    // after the date of the newest upstream documentation it was read from.
    MakeWireGeneration({.name = "gnewest-20260924",
                        .commit = "",
                        .span_first = "2026-08-15",
                        .span_last = "2026-09-24",
                        .scheduler_stats_keys = kStatsNewest,
                        .prefix_cache_stats_keys = 8,
                        .spec_decoding_stats_keys = 6,
                        .prefill_stats_keys = 6,
                        .nixl_keys = 8,
                        .nixl_failures_are_ints = true,
                        .max_finish_reason = 4,
                        .logprobs = LogprobsForm::kTensors,
                        .ready_form = ReadyForm::kWithParallelism,
                        .vllm_releases = kReleasesNone,
                        .request = kRequests20260812},
                       {VMETRICS_OUTPUT_0_TO_8, F::kEcTransferParams, F::kTraceHeaders,
                        F::kPrefillStats, F::kRoutedExperts, F::kNumNansInLogits,
                        F::kMmCacheMissHashes, F::kNewSamplingMask, F::kSpecDecodeMetrics}),
};
#undef VMETRICS_OUTPUT_0_TO_8

// The decoder reads positions 0 and 1 before the table (request_id, new_token_ids are required
// everywhere), and skips nil runs with nil_run_end: both rely on these.
constexpr bool TablesAreConsistent() {
  for (const WireGeneration& g : kGenerations) {
    if (g.output_count < 2 || g.output_count > kMaxOutputPositions) return false;
    if (g.output[0] != F::kRequestId || g.output[1] != F::kNewTokenIds) return false;
    for (size_t p = 0; p < g.output_count; ++p) {
      const uint8_t end = g.nil_run_end[p];
      if (end != kNilRunToTheEnd && (end < p || end >= g.output_count)) return false;
    }
    for (size_t p = g.output_count; p < kMaxOutputPositions; ++p) {
      if (g.nil_run_end[p] != kNilRunToTheEnd) return false;
    }
    for (size_t p = g.output_count; p < kMaxOutputPositions; ++p) {
      if (g.output[p] != F::kUnknown) return false;
    }
    // msgspec writes each SchedulerStats key once; the encoder and the recogniser's key set
    // rely on it.
    for (size_t i = 0; i < g.scheduler_stats_keys.size(); ++i) {
      if (g.scheduler_stats_keys[i] == K::kUnknown) return false;
      for (size_t j = 0; j < i; ++j) {
        if (g.scheduler_stats_keys[j] == g.scheduler_stats_keys[i]) return false;
      }
    }
  }
  return true;
}
static_assert(TablesAreConsistent());

// The encoder writes request_id, prompt_token_ids and SamplingParams where every generation has
// them, and a LoRARequest always starts with its name, id and path (lora_path has a default,
// so a cut LoRARequest still names its adapter).
constexpr bool RequestTablesAreConsistent() {
  for (const WireGeneration& g : kGenerations) {
    const RequestLayout& r = g.request;
    if (r.fields.size() < 9 || r.required > r.fields.size()) return false;
    if (r.fields[0] != R::kRequestId || r.fields[1] != R::kPromptTokenIds ||
        r.fields[3] != R::kSamplingParams) {
      return false;
    }
    if (r.lora.size() < 3 || r.lora[0] != L::kLoraName || r.lora[1] != L::kLoraIntId ||
        r.lora[2] != L::kLoraPath || r.lora_required != 2) {
      return false;
    }
  }
  return true;
}
static_assert(RequestTablesAreConsistent());

// "0.11.0", "v0.11.0", "0.11.0rc2" -> "0.11.0" (pre-releases are cut from the same branch).
std::string_view ReleaseOf(std::string_view v) {
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) v.remove_prefix(1);
  size_t end = 0;
  int dots = 0;
  while (end < v.size() && ((v[end] >= '0' && v[end] <= '9') || v[end] == '.')) {
    if (v[end] == '.') ++dots;
    ++end;
  }
  if (dots < 2) return {};
  std::string_view release = v.substr(0, end);
  // "0.11.0.dev" and "0.11.0+cu128" keep their release part; a dev build is not a release.
  std::string_view rest = v.substr(end);
  if (rest.rfind(".dev", 0) == 0 || rest.rfind("dev", 0) == 0) return {};
  while (!release.empty() && release.back() == '.') release.remove_suffix(1);
  return release;
}

}  // namespace

const char* OutputFieldName(OutputField field) {
  switch (field) {
    case F::kRequestId:
      return "request_id";
    case F::kNewTokenIds:
      return "new_token_ids";
    case F::kNewLogprobs:
      return "new_logprobs";
    case F::kNewPromptLogprobsTensors:
      return "new_prompt_logprobs_tensors";
    case F::kPoolingOutput:
      return "pooling_output";
    case F::kFinishReason:
      return "finish_reason";
    case F::kStopReason:
      return "stop_reason";
    case F::kEvents:
      return "events";
    case F::kKvTransferParams:
      return "kv_transfer_params";
    case F::kEcTransferParams:
      return "ec_transfer_params";
    case F::kTraceHeaders:
      return "trace_headers";
    case F::kNumCachedTokens:
      return "num_cached_tokens";
    case F::kNumExternalComputedTokens:
      return "num_external_computed_tokens";
    case F::kPrefillStats:
      return "prefill_stats";
    case F::kRoutedExperts:
      return "routed_experts";
    case F::kNumNansInLogits:
      return "num_nans_in_logits";
    case F::kMmCacheMissHashes:
      return "mm_cache_miss_hashes";
    case F::kNewSamplingMask:
      return "new_sampling_mask";
    case F::kSpecDecodeMetrics:
      return "spec_decode_metrics";
    case F::kUnknown:
      return "unknown";
  }
  return "unknown";
}

const char* ReadyFormName(ReadyForm form) {
  switch (form) {
    case ReadyForm::kEmptyRegistration:
      return "empty registration, READY with num_gpu_blocks";
    case ReadyForm::kThreeFields:
      return "ready response of 3 fields";
    case ReadyForm::kWithVersion:
      return "ready response with vllm_version";
    case ReadyForm::kWithParallelism:
      return "ready response with tensor_parallel_size";
  }
  return "?";
}

int WireGeneration::PositionOf(OutputField field) const {
  for (size_t p = 0; p < output_count; ++p) {
    if (output[p] == field) return static_cast<int>(p);
  }
  return -1;
}

const char* RequestFieldName(RequestField field) {
  switch (field) {
    case R::kRequestId:
      return "request_id";
    case R::kPromptTokenIds:
      return "prompt_token_ids";
    case R::kMmFeatures:
      return "mm_features";
    case R::kSamplingParams:
      return "sampling_params";
    case R::kPoolingParams:
      return "pooling_params";
    case R::kEosTokenId:
      return "eos_token_id";
    case R::kArrivalTime:
      return "arrival_time";
    case R::kLoraRequest:
      return "lora_request";
    case R::kCacheSalt:
      return "cache_salt";
    case R::kDataParallelRank:
      return "data_parallel_rank";
    case R::kPromptEmbeds:
      return "prompt_embeds";
    case R::kPromptIsTokenIds:
      return "prompt_is_token_ids";
    case R::kClientIndex:
      return "client_index";
    case R::kCurrentWave:
      return "current_wave";
    case R::kPriority:
      return "priority";
    case R::kTraceHeaders:
      return "trace_headers";
    case R::kResumable:
      return "resumable";
    case R::kExternalReqId:
      return "external_req_id";
    case R::kReasoningEnded:
      return "reasoning_ended";
    case R::kReasoningParserKwargs:
      return "reasoning_parser_kwargs";
    case R::kAbortImmediately:
      return "abort_immediately";
    case R::kSessionId:
      return "session_id";
  }
  return "unknown";
}

const char* LoraFieldName(LoraField field) {
  switch (field) {
    case L::kLoraName:
      return "lora_name";
    case L::kLoraIntId:
      return "lora_int_id";
    case L::kLoraPath:
      return "lora_path";
    case L::kLoraLocalPath:
      return "lora_local_path";
    case L::kLongLoraMaxLen:
      return "long_lora_max_len";
    case L::kBaseModelName:
      return "base_model_name";
    case L::kTensorizerConfigDict:
      return "tensorizer_config_dict";
    case L::kLoadInplace:
      return "load_inplace";
    case L::kIs3dLoraWeight:
      return "is_3d_lora_weight";
  }
  return "unknown";
}

const char* SamplingKeyName(SamplingKey key) {
  switch (key) {
    case S::kN:
      return "n";
    case S::kBestOf:
      return "best_of";
    case S::kRealN:
      return "_real_n";
    case S::kPresencePenalty:
      return "presence_penalty";
    case S::kFrequencyPenalty:
      return "frequency_penalty";
    case S::kRepetitionPenalty:
      return "repetition_penalty";
    case S::kTemperature:
      return "temperature";
    case S::kTopP:
      return "top_p";
    case S::kTopK:
      return "top_k";
    case S::kMinP:
      return "min_p";
    case S::kSeed:
      return "seed";
    case S::kStop:
      return "stop";
    case S::kStopTokenIds:
      return "stop_token_ids";
    case S::kIgnoreEos:
      return "ignore_eos";
    case S::kMaxTokens:
      return "max_tokens";
    case S::kMinTokens:
      return "min_tokens";
    case S::kLogprobs:
      return "logprobs";
    case S::kPromptLogprobs:
      return "prompt_logprobs";
    case S::kLogprobTokenIds:
      return "logprob_token_ids";
    case S::kFlatLogprobs:
      return "flat_logprobs";
    case S::kDetokenize:
      return "detokenize";
    case S::kSkipSpecialTokens:
      return "skip_special_tokens";
    case S::kSpacesBetweenSpecialTokens:
      return "spaces_between_special_tokens";
    case S::kLogitsProcessors:
      return "logits_processors";
    case S::kIncludeStopStrInOutput:
      return "include_stop_str_in_output";
    case S::kTruncatePromptTokens:
      return "truncate_prompt_tokens";
    case S::kOutputKind:
      return "output_kind";
    case S::kStreamInterval:
      return "stream_interval";
    case S::kSkipClone:
      return "skip_clone";
    case S::kOutputTextBufferLength:
      return "output_text_buffer_length";
    case S::kEosTokenId:
      return "_eos_token_id";
    case S::kAllStopTokenIds:
      return "_all_stop_token_ids";
    case S::kStructuredOutputs:
      return "structured_outputs";
    case S::kGuidedDecoding:
      return "guided_decoding";
    case S::kLogitBias:
      return "logit_bias";
    case S::kAllowedTokenIds:
      return "allowed_token_ids";
    case S::kExtraArgs:
      return "extra_args";
    case S::kRoutedExpertsPromptStart:
      return "routed_experts_prompt_start";
    case S::kBadWords:
      return "bad_words";
    case S::kBadWordsTokenIds:
      return "_bad_words_token_ids";
    case S::kSkipReadingPrefixCache:
      return "skip_reading_prefix_cache";
    case S::kThinkingTokenBudget:
      return "thinking_token_budget";
    case S::kRepetitionDetection:
      return "repetition_detection";
  }
  return "unknown";
}

int RequestLayout::PositionOf(RequestField field) const {
  for (size_t p = 0; p < fields.size(); ++p) {
    if (fields[p] == field) return static_cast<int>(p);
  }
  return -1;
}

bool RequestLayout::Has(SamplingKey key) const {
  return std::find(sampling.begin(), sampling.end(), key) != sampling.end();
}

std::span<const WireGeneration> WireGenerations() { return kGenerations; }

const WireGeneration& NewestWireGeneration() { return kGenerations[std::size(kGenerations) - 1]; }

size_t WireGenerationIndex(const WireGeneration& g) {
  return static_cast<size_t>(&g - kGenerations);
}

const WireGeneration* FindWireGeneration(std::string_view name) {
  for (const WireGeneration& g : kGenerations) {
    if (g.name == name) return &g;
    const size_t dash = g.name.find('-', 1);
    if (g.name.substr(0, dash) == name) return &g;
  }
  const std::string_view release = ReleaseOf(name);
  if (release.empty()) return nullptr;
  for (const WireGeneration& g : kGenerations) {
    for (std::string_view r : g.vllm_releases) {
      if (!r.empty() && r == release) return &g;
    }
  }
  return nullptr;
}

const WireGeneration* WireGenerationOfVllmVersion(std::string_view version) {
  // A source build: "<release>.dev<N>+g<short sha>[.d<date>]" (setuptools-scm).
  const size_t plus = version.find("+g");
  if (plus != std::string_view::npos) {
    std::string_view sha = version.substr(plus + 2);
    sha = sha.substr(0, sha.find('.'));
    if (sha.size() >= 7) {
      for (const WireGeneration& g : kGenerations) {
        if (!g.commit.empty() && g.commit.rfind(sha, 0) == 0) return &g;
      }
    }
    return nullptr;
  }
  const std::string_view release = ReleaseOf(version);
  if (release.empty()) return nullptr;
  for (const WireGeneration& g : kGenerations) {
    for (std::string_view r : g.vllm_releases) {
      if (!r.empty() && r == release) return &g;
    }
  }
  return nullptr;
}

bool LayoutsAgree(const WireGeneration& a, const WireGeneration& b) {
  const size_t common = std::min(a.output_count, b.output_count);
  for (size_t p = 0; p < common; ++p) {
    if (a.output[p] != b.output[p]) return false;
  }
  return true;
}

}  // namespace vmetrics
