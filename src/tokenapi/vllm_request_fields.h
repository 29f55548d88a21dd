// SPDX-License-Identifier: Apache-2.0
// File: vllm_request_fields.h
//
// The fields vLLM's request models declare, for the objects of a token API request body. A
// field a model declares is one vLLM reads and honours; one it does not declare vLLM ignores
// (OpenAIBaseModel has extra="allow" and logs the names at debug level; GenerateRequest, a
// plain pydantic BaseModel, has extra="ignore"; SamplingParams is validated as a TypedDict,
// which ignores extra keys). So a token API ignores what is not here, and refuses by name
// what is here and it does not read (JsonFields::SortUnread).
//
// Read at vllm-project/vllm 6adad087 (its main history is in public mirrors such as
// jsboige/vllm): CompletionRequest in vllm/entrypoints/openai/completion/protocol.py,
// GenerateRequest in vllm/entrypoints/scale_out/token_in_token_out/protocol.py, SamplingParams
// (its public fields: PydanticMsgspecMixin in vllm/v1/serial_utils.py leaves out those starting
// with "_") in vllm/sampling_params.py, StreamOptions in
// vllm/entrypoints/openai/engine/protocol.py. The fields each class declares, in order; a field
// added upstream is added here, and the parser either reads it or refuses it from then on.
//
// Constants: safe from any thread.
#ifndef VMETRICS_FRONTEND_VLLM_REQUEST_FIELDS_H_
#define VMETRICS_FRONTEND_VLLM_REQUEST_FIELDS_H_

#include <array>
#include <string_view>

namespace vmetrics::frontend {

inline constexpr std::array<std::string_view, 53> kCompletionRequestFields = {
    "model",
    "prompt",
    "echo",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "max_tokens",
    "n",
    "presence_penalty",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "suffix",
    "temperature",
    "top_p",
    "user",
    "use_beam_search",
    "top_k",
    "min_p",
    "repetition_penalty",
    "length_penalty",
    "stop_token_ids",
    "include_stop_str_in_output",
    "ignore_eos",
    "min_tokens",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "truncate_prompt_tokens",
    "truncation_side",
    "allowed_token_ids",
    "prompt_logprobs",
    "logprob_token_ids",
    "bad_words",
    "prompt_embeds",
    "add_special_tokens",
    "response_format",
    "structured_outputs",
    "priority",
    "request_id",
    "session_id",
    "return_tokens_as_token_ids",
    "return_token_ids",
    "routed_experts_prompt_start",
    "return_token_offsets",
    "cache_salt",
    "kv_transfer_params",
    "ec_transfer_params",
    "vllm_xargs",
    "repetition_detection",
    "thinking_token_budget",
    "stream_interval",
    // Not a field at 6adad087; vmetrics reads it (vLLM's render endpoints return it).
    "return_mm_kwargs",
};

inline constexpr std::array<std::string_view, 14> kGenerateRequestFields = {
    "request_id",
    "token_ids",
    "assistant_tokens_mask",
    "token_offsets",
    "features",
    "content_parts",
    "sampling_params",
    "model",
    "stream",
    "stream_options",
    "cache_salt",
    "priority",
    "kv_transfer_params",
    "ec_transfer_params",
};

inline constexpr std::array<std::string_view, 35> kSamplingParamsFields = {
    "n",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "stop_token_ids",
    "ignore_eos",
    "max_tokens",
    "min_tokens",
    "logprobs",
    "prompt_logprobs",
    "logprob_token_ids",
    "flat_logprobs",
    "detokenize",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "include_stop_str_in_output",
    "output_kind",
    "stream_interval",
    "skip_clone",
    "output_text_buffer_length",
    "structured_outputs",
    "logit_bias",
    "allowed_token_ids",
    "extra_args",
    "routed_experts_prompt_start",
    "bad_words",
    "skip_reading_prefix_cache",
    "thinking_token_budget",
    "repetition_detection",
};

inline constexpr std::array<std::string_view, 2> kStreamOptionsFields = {
    "include_usage",
    "continuous_usage_stats",
};

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_VLLM_REQUEST_FIELDS_H_
