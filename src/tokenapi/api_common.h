// SPDX-License-Identifier: Apache-2.0
// File: api_common.h
//
// Request checks and answer pieces both token APIs (completion_api.h, generate_api.h) share,
// each as vLLM's server has it.
//
// Pure functions: safe from any thread.
#ifndef VMETRICS_FRONTEND_API_COMMON_H_
#define VMETRICS_FRONTEND_API_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json_fields.h"
#include "token_request.h"

namespace vmetrics::frontend {

// A refused request: `error` and nothing else.
ParsedRequest Refuse(ApiError error);

// The start both token APIs share, before each reads its own fields: `doc` (the body as
// Json::parse reads it without exceptions) must be JSON and a JSON object (400 "request body
// is not valid JSON" / "... must be a JSON object" otherwise), and its `model`, read through
// `f` (which reads `doc`), must pass CheckModel. Returns the request begun (`api`, `lora`), or
// the refusal.
ParsedRequest StartTokenRequest(const Json& doc, JsonFields& f, const ServingConfig& config,
                                TokenApi api);

// vLLM's cache_salt check (validate_cache_salt, vllm/entrypoints/generate/base/protocol.py at
// vllm-project/vllm 567b35aa): null, or a non-empty string of at most 128 characters without
// '@', '/', '\\' or NUL.
MaybeError CheckCacheSalt(const std::optional<std::string>& salt);

// The longest id a client may give, in bytes: X-Request-Id, the body's request_id and
// session_id. Each goes into every EngineCoreRequest of the request (and its children's ids),
// the request table and the log; vLLM bounds none of them. 512 bytes holds a UUID under any
// router prefix vLLM's disaggregation proxies put before it.
inline constexpr size_t kMaxClientIdBytes = 512;

// An id from a client (`name`: the header or field it came in) that goes to an engine as a
// msgpack str: refused (400 naming it) unless valid UTF-8 (RFC 3629, as Python's strict
// decoder, which a vLLM engine's msgspec decoder applies: an invalid str there ends the
// engine's input thread), at most kMaxClientIdBytes, and free of control characters (C0, DEL).
MaybeError CheckClientId(std::string_view value, std::string_view name);

// The X-Request-Id header (`value`, nullptr when absent) checked as CheckClientId: `parsed`
// as it was when the header is absent, empty or good, else the refusal. vLLM reads header
// bytes as Latin-1, so a non-UTF-8 id reaches its engines re-encoded; vmetrics refuses it.
ParsedRequest CheckRequestIdHeader(ParsedRequest parsed, const std::string* value);

// The headers vLLM's serving code reads beside the body (GenerateBaseServing,
// vllm/entrypoints/generate/base/serving.py at 6adad087; values nullptr when absent):
//   X-Session-ID: the session id when the body has none (completions: before
//     vllm_xargs["session_id"]; generate: the only source), checked as CheckClientId;
//   X-Vllm-Priority (completions only): the priority when Python's int() reads it (blanks
//     around, a sign, digits with single underscores between them), else the body's; a value
//     outside int64, which no engine can decode, is refused naming the header.
ParsedRequest ApplyRequestHeaders(ParsedRequest parsed, const std::string* session_id,
                                  const std::string* priority);

// `model`: absent, null, the served name, or a LoRA module's name (returned in `lora`);
// anything else is vLLM's 404 "The model `X` does not exist." (models/serving.py at 00153c8b).
MaybeError CheckModel(JsonFields& f, const ServingConfig& config, std::optional<LoraModule>* lora);

// stream_options {include_usage, continuous_usage_stats}; continuous usage needs include_usage
// (should_include_usage, vllm/entrypoints/serve/utils/api_utils.py at 00a5fdd2). Other keys
// are appended to `ignored`, as StreamOptions (an OpenAIBaseModel) ignores them.
MaybeError ReadStreamOptions(JsonFields& f, TokenRequest* r, std::vector<std::string>* ignored);

// vLLM's per-request `metrics` object (PerRequestTimingMetrics, built by
// build_per_request_timing_metrics in vllm/entrypoints/generate/base/serving.py at
// vllm-project/vllm 6adad087) from a finished request's timestamps (nullopt: every field
// null) and the tokens it generated: time_to_first_token_ms (scheduled to first token),
// generation_time_ms (first to last token), queue_time_ms (queued to scheduled), mean_itl_ms
// (decode time over tokens - 1, with more than one token), tokens_per_second (tokens over
// scheduled to last token, when that is positive); each null unless the timestamps it needs
// are set (> 0). `with_nulls` false leaves the null ones out (a stream's usage chunk, dumped
// with exclude_none).
Json PerRequestMetricsJson(const std::optional<RequestTimestamps>& timestamps,
                           int64_t num_generation_tokens, bool with_nulls);

// vLLM's `metrics.speculative_decoding` (PR #48915) from the engine's RequestSpecDecodeMetrics:
// mean_acceptance_length (1 + accepted / steps; 1.0 without steps), draft_acceptance_rate
// (accepted / drafted; 0.0 without drafts), acceptance_histogram, num_spec_steps,
// num_accepted_draft_tokens, num_draft_tokens, num_spec_tokens; with `detailed`, and when the
// engine kept them, per_step_accepted and per_step_drafted.
Json SpeculativeDecodingJson(const RequestSpecDecodeMetrics& m, bool detailed);

// The `metrics` object of an answer with one choice `c` of `tokens` generated tokens: the
// timings when `timing` (PerRequestMetricsJson), then `speculative_decoding` when
// config.spec_decode_metrics is on (null when the engine sent none). `with_nulls` false leaves
// null members out (a stream's usage chunk).
Json ChoiceMetricsJson(const ServingConfig& config, const ChoiceState& c, int64_t tokens,
                       bool timing, bool with_nulls);

// A raw msgpack value the engine sent (kv_transfer_params) as the JSON vLLM's server answers
// with: maps in wire order, ints and floats kept apart. Null when it does not decode.
Json MsgpackValueJson(std::string_view raw);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_API_COMMON_H_
