// SPDX-License-Identifier: Apache-2.0
// File: generate_api.h
//
// POST /inference/v1/generate, the token-in/token-out endpoint of vLLM's scale-out design
// (vllm/entrypoints/scale_out/token_in_token_out/: protocol.py at vllm-project/vllm 5dfbdc4d,
// serving.py at 00a80787): a GenerateRequest {request_id, token_ids, sampling_params, model,
// stream, stream_options, cache_salt, priority, kv_transfer_params} in, a GenerateResponse
// {request_id "generate-tokens-<id>", model, created, choices [{index, logprobs,
// finish_reason, token_ids, routed_experts, stop_reason}], usage, prompt_logprobs,
// kv_transfer_params} or a stream of GenerateStreamResponse chunks out.
//
// sampling_params is an object of SamplingParams field names (sampling_fields.h). When it has
// no max_tokens the server gives the request the rest of the context (max_model_len - prompt
// length, capped by the generation config's max_new_tokens), as vLLM's server does since it
// tells "omitted" from "16"; an explicit null is sent as None, for the engine to fill. The
// server is tokens-only: detokenize is sent false, stop strings are refused. kv_transfer_params
// reaches the engine as sampling_params.extra_args["kv_transfer_params"] and comes back, from
// the engine's final output, at the top of the response. Logprobs are vLLM's placeholder shape:
// ChatCompletionLogProbs whose tokens are "token_id:<id>". `stop_reason` on a choice (the stop
// token id, or null) is vLLM PR #47313's field, sent ahead of upstream. `routed_experts` is
// base64 of the .npy of the engine's routing (null when it sent none; in a stream on the
// chunk that finishes), and a whole answer's choice has `sampling_mask` (before stop_reason)
// when the engine sent masks (numpy_arrays.h; the serving code at vllm-project/vllm 6adad087).
//
// Pure functions, no state: safe from any thread.
//
// Example:
//   ParsedRequest p = ParseGenerateRequest(
//       R"({"token_ids":[1,2,3],"sampling_params":{"max_tokens":5}})", config);
//   ASSERT_TRUE(p.ok());
//   EXPECT_EQ(p.request.sampling.max_tokens, 5);
#ifndef VMETRICS_FRONTEND_GENERATE_API_H_
#define VMETRICS_FRONTEND_GENERATE_API_H_

#include <string>
#include <string_view>
#include <vector>

#include "token_request.h"

namespace vmetrics::frontend {

// ParseGenerateRequest: a 400 naming the field (prefixed "sampling_params." inside it) for
// anything vLLM refuses or vmetrics cannot honour, 404 for an unknown `model`.
ParsedRequest ParseGenerateRequest(std::string_view body, const ServingConfig& config);

// The non-streamed GenerateResponse (every key, nulls included, as JSONResponse(model_dump())).
std::string GenerateResponseJson(const ServingConfig& config, const TokenRequest& request,
                                 const ResponseIdentity& identity, const PromptState& prompt,
                                 const std::vector<ChoiceState>& choices);

// One GenerateStreamResponse event: "data: {...}\n\n".
std::string GenerateChunkEvent(const TokenRequest& request, const ResponseIdentity& identity,
                               const PromptState& prompt, const ChoiceDelta& delta);

// The usage event of stream_options.include_usage: {"request_id", "choices": [], "usage"},
// without null keys.
std::string GenerateUsageEvent(const ServingConfig& config, const ResponseIdentity& identity,
                               const PromptState& prompt, const std::vector<ChoiceState>& choices);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_GENERATE_API_H_
