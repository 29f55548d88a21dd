// SPDX-License-Identifier: Apache-2.0
// File: sampling_rules.h
//
// What vLLM's frontend does to a request's SamplingParams between parsing and sending, for both
// token APIs: SamplingParams.__post_init__ and _verify_args (range checks with vLLM's wording;
// temperature below 0.01 raised to it; seed -1 = none; stop and stop_token_ids None -> [],
// stop_token_ids deduplicated; greedy sampling resets top_p, top_k and min_p and needs n = 1;
// skip_reading_prefix_cache when prompt logprobs are asked for; _all_stop_token_ids from the stop
// tokens), update_from_generation_config (the EOS into _eos_token_id unless ignore_eos and into
// _all_stop_token_ids; the generation config's other EOS ids into both stop sets), and the
// checks against the engine's configuration (--max-logprobs, the vocabulary size when known).
// Sources: vllm/sampling_params.py at vllm-project/vllm 00388f65,
// vllm/v1/engine/input_processor.py at a1799180.
//
// Pure functions: safe from any thread.
//
// Example:
//   SamplingParams p;
//   p.temperature = 0;
//   p.n = 2;
//   std::optional<ApiError> e = FinishSamplingParams(config, &p);
//   EXPECT_EQ(e->message, "n must be 1 when using greedy sampling, got 2.");
#ifndef VMETRICS_FRONTEND_SAMPLING_RULES_H_
#define VMETRICS_FRONTEND_SAMPLING_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "token_request.h"

namespace vmetrics::frontend {

// FinishSamplingParams
//
// Checks `p` and fills in what vLLM derives (see the file comment). A refusal is a 400 naming
// the field; `prefix` is put before field names ("sampling_params." for generate).
std::optional<ApiError> FinishSamplingParams(const ServingConfig& config, SamplingParams* p,
                                             const std::string& prefix = "");

// Token ids of a prompt: each within the vocabulary when its size is known (vLLM's
// "Token id {t} is out of vocabulary").
std::optional<ApiError> CheckPromptTokens(const ServingConfig& config,
                                          const std::vector<int64_t>& prompt,
                                          const std::string& param);

// vLLM's context check: prompt + max_tokens within max_model_len (the 400 of
// serving_engine.py _validate_input, in its wording).
std::optional<ApiError> CheckContextLength(const ServingConfig& config, int64_t prompt_len,
                                           int64_t max_tokens);

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_SAMPLING_RULES_H_
