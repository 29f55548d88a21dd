// SPDX-License-Identifier: Apache-2.0
// File: completion_api.h
//
// POST /v1/completions as vmetrics speaks it, token ids in and out: parsing and checking a body
// (ParseCompletionRequest) into a TokenRequest, and writing the JSON vLLM's OpenAI-compatible
// server answers with — the whole response, one server-sent-event chunk, the usage chunk.
// Fields and their meaning follow CompletionRequest (vllm/entrypoints/openai/completion/
// protocol.py at vllm-project/vllm 002032ee) and the serving code
// (vllm/entrypoints/openai/completion/serving.py at cc139d8e).
//
// vmetrics has no tokenizer, so:
//   - prompts are lists of token ids; choices carry `token_ids` and an empty `text`;
//   - logprobs come back as vLLM's --return-tokens-as-token-ids gives them, tokens written
//     "token_id:<id>" (`return_tokens_as_token_ids: false` with logprobs is refused);
//   - `echo` returns the prompt as `prompt_token_ids` (and, with logprobs, the prompt's
//     positions first in `logprobs`), as vLLM does with return_token_ids;
//   - anything that needs text (stop strings, bad_words, structured outputs, suffix, beam
//     search) is refused with a 400 naming the field, and so is every field vmetrics does not
//     know: no parameter is accepted and then ignored.
// `max_tokens` null means 16, as in vLLM since CompletionRequest.normalize_null_max_tokens.
//
// Pure functions, no state: safe from any thread.
//
// Example:
//   ServingConfig config{.max_model_len = 8192, .served_model_name = "m"};
//   ParsedRequest p = ParseCompletionRequest(R"({"prompt":[1,2,3],"max_tokens":4})", config);
//   ASSERT_TRUE(p.ok());
//   EXPECT_EQ(p.request.prompts[0].size(), 3u);
#ifndef VMETRICS_FRONTEND_COMPLETION_API_H_
#define VMETRICS_FRONTEND_COMPLETION_API_H_

#include <string>
#include <string_view>
#include <vector>

#include "token_request.h"

namespace vmetrics::frontend {

// ParseCompletionRequest
//
// Checks a request body: a 400 naming the field for anything vLLM refuses or vmetrics cannot
// honour (see the file comment and docs/operator-guide.md), a 404 for a `model` that is
// neither the served one nor a LoRA module's name, as from vLLM.
ParsedRequest ParseCompletionRequest(std::string_view body, const ServingConfig& config);

// The non-streamed response: {"id","object":"text_completion","created","model","choices":[
// {"index","text":"","logprobs","finish_reason","stop_reason","token_ids","prompt_logprobs",
// "prompt_token_ids"}],"service_tier","system_fingerprint","usage","kv_transfer_params"}; a
// choice ends with "routed_experts" when the engine sent routing (numpy_arrays.h), and with
// config.enable_per_request_metrics the answer ends with "metrics" (PerRequestMetricsJson;
// null unless one prompt with n = 1).
std::string CompletionResponseJson(const ServingConfig& config, const TokenRequest& request,
                                   const ResponseIdentity& identity,
                                   const std::vector<PromptState>& prompts,
                                   const std::vector<ChoiceState>& choices);

// One server-sent event with a choice's new tokens: "data: {...}\n\n".
std::string CompletionChunkEvent(const TokenRequest& request, const ResponseIdentity& identity,
                                 const std::vector<PromptState>& prompts, const ChoiceDelta& delta);

// The usage event of stream_options.include_usage or --enable-force-include-usage (choices
// empty); with config.enable_per_request_metrics and one choice it carries "metrics" without
// its null fields.
std::string CompletionUsageEvent(const ServingConfig& config, const ResponseIdentity& identity,
                                 const std::vector<PromptState>& prompts,
                                 const std::vector<ChoiceState>& choices);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_COMPLETION_API_H_
