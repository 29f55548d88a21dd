// SPDX-License-Identifier: Apache-2.0
// File: token_request.h
//
// What the token APIs of `vmetrics serve` agree on: the server's side of a request
// (ServingConfig: its limits, model names and generation config) and a checked request of
// either API (TokenRequest: the prompts, the SamplingParams every engine request carries, and
// how the answer is to be shaped), which RequestService sends and answers. The APIs turn their
// JSON into a TokenRequest (completion_api.h, generate_api.h) and write their answers from the
// engines' outputs.
//
// Thread safety: plain values.
#ifndef VMETRICS_FRONTEND_TOKEN_REQUEST_H_
#define VMETRICS_FRONTEND_TOKEN_REQUEST_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api_error.h"
#include "generation_config.h"
#include "logprobs.h"
#include "numpy_arrays.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/lora_module.h"

namespace vmetrics::frontend {

enum class SpecDecodeMetricsLevel : uint8_t { kNone, kSummary, kDetailed };

// ServingConfig: what the server allows and knows.
struct ServingConfig {
  int64_t max_model_len = 8192;   // prompt + max_tokens must fit (vLLM's check)
  std::string served_model_name;  // `model`, when given, must be this or a LoRA module's name
  std::vector<LoraModule> lora_modules;
  int64_t max_n = 128;        // choices per prompt
  size_t max_prompts = 1024;  // prompts per request (a list of lists)
  // Engine requests one request may make (prompts x n): each is an engine's work and a
  // choice held in memory until it ends.
  int64_t max_engine_requests = 1024;
  // vLLM's --max-logprobs: sample and prompt logprobs a request may ask for; -1 = no limit.
  int64_t max_logprobs = 20;
  // vLLM's --enable-prompt-tokens-details: usage.prompt_tokens_details.cached_tokens.
  bool enable_prompt_tokens_details = false;
  // vLLM's --enable-per-request-metrics: the `metrics` object of completions.
  bool enable_per_request_metrics = false;
  // vLLM's --enable-force-include-usage: completion streams report usage as if
  // stream_options had include_usage and continuous_usage_stats.
  bool enable_force_include_usage = false;
  // vLLM's --per-request-spec-decode-metrics: metrics.speculative_decoding in single-choice
  // answers of both APIs; kDetailed with the per-step lists.
  SpecDecodeMetricsLevel spec_decode_metrics = SpecDecodeMetricsLevel::kNone;
  GenerationConfig generation;
};

enum class TokenApi : uint8_t {
  kCompletions,  // POST /v1/completions
  kGenerate,     // POST /inference/v1/generate
};

// TokenRequest: a checked request of either API.
struct TokenRequest {
  TokenApi api = TokenApi::kCompletions;
  std::vector<std::vector<int64_t>> prompts;  // one or more prompts of token ids
  // What every engine request of it carries, finished as vLLM's frontend finishes it
  // (post-init normalisation, generation config, EOS): n is the choices per prompt (each engine
  // request gets n = 1), max_tokens the value after server-side defaulting.
  SamplingParams sampling;
  std::optional<LoraModule> lora;  // the module `model` named; unset = the base model
  std::string request_id;          // the body's request_id; "" = none given
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage: a usage chunk before [DONE]
  bool continuous_usage = false;  // stream_options.continuous_usage_stats: usage on every chunk
  int64_t priority = 0;
  std::optional<std::string> cache_salt;
  std::optional<std::string> session_id;
  // vllm_xargs["session_id"] when it is a non-empty string: the session id when neither the
  // body's session_id nor the X-Session-ID header gives one (completions).
  std::optional<std::string> xargs_session_id;

  // How the answer is shaped.
  // Logprobs of each output position in the answer: completions' `logprobs` (top entries per
  // position: this many plus the sampled one), generate's sampling_params.logprobs. nullopt =
  // none.
  std::optional<int64_t> response_logprobs;
  bool echo = false;                     // completions: the prompt comes back with the output
  bool echo_without_generation = false;  // echo with max_tokens 0: only the prompt
  bool return_token_ids = false;         // prompt_token_ids on the choices
};

// What the engines sent for one prompt of a request.
struct PromptState {
  std::vector<int64_t> token_ids;  // the prompt
  // Prompt logprobs, once they came: position 0 has none (nullopt), as in vLLM.
  std::vector<std::optional<PositionLogprobs>> prompt_logprobs;
  bool has_prompt_logprobs = false;
  std::optional<int64_t> cached_tokens;  // prefill_stats.num_cached_tokens of its first output
  std::string kv_transfer_params;        // raw msgpack of its final output's; "" = none
};

// What the engine sent for one choice (prompt p, sample i: index p * n + i).
// The RequestStateStats timestamps of a finished engine request (FinishedRequestStats; engine
// monotonic seconds, 0 = never set): what the per-request `metrics` object is computed from.
struct RequestTimestamps {
  double queued_ts = 0;
  double scheduled_ts = 0;
  double first_token_ts = 0;
  double last_token_ts = 0;
};

struct ChoiceState {  // NOLINT(bugprone-exception-escape): a null json() never allocates
  std::vector<int64_t> token_ids;
  std::vector<std::optional<PositionLogprobs>> logprobs;  // per token, when asked for
  std::string finish_reason;                              // "" while running
  nlohmann::ordered_json stop_reason;                     // null, a token id or a string
  // Set when its engine request finished with statistics (the tracker's).
  std::optional<RequestTimestamps> timestamps;
  // The engine's routed_experts chunks and sampling masks (engine options
  // --enable-return-routed-experts, --return-sampling-mask); empty when it sent none.
  ArrayConcat routed_experts;
  SamplingMaskMerge sampling_mask;
  // The engine's RequestSpecDecodeMetrics of the final output, with
  // --per-request-spec-decode-metrics; nullopt when it sent none.
  std::optional<RequestSpecDecodeMetrics> spec_decode;
};

// Who answers: the response's id ("cmpl-...", "generate-tokens-..."), `created` (Unix
// seconds) and `model`.
struct ResponseIdentity {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// One streamed piece of a choice: its new tokens and their logprobs, the finish reason on the
// last, usage when stream_options asks for it on every chunk.
struct ChoiceDelta {  // NOLINT(bugprone-exception-escape): a null json() never allocates
  size_t index = 0;
  size_t prompt = 0;
  bool first = false;  // the choice's first chunk (echo and prompt_token_ids go there)
  std::vector<int64_t> token_ids;
  std::vector<std::optional<PositionLogprobs>> logprobs;
  std::string finish_reason;  // "" = none yet
  nlohmann::ordered_json stop_reason;
  std::optional<int64_t> completion_tokens;  // continuous usage: the choice's tokens so far
  std::string routed_experts;  // generate's last chunk: ArrayConcat::NpyBase64; "" = null
};

// ParsedRequest: a TokenRequest, or why it was refused.
struct ParsedRequest {
  TokenRequest request;
  std::optional<ApiError> error;
  // Fields vLLM's request model would ignore, ignored ("sampling_params.best_of"): the server
  // counts them (vmetrics_request_fields_ignored_total) and logs each name once.
  std::vector<std::string> ignored_fields;
  bool ok() const { return !error.has_value(); }
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_TOKEN_REQUEST_H_
