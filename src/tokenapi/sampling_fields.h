// SPDX-License-Identifier: Apache-2.0
// File: sampling_fields.h
//
// ReadSamplingFields: the SamplingParams keys a request may set, read from a JSON object into
// SamplingParams: the top level of a /v1/completions body (CompletionRequest's sampling
// fields) or the `sampling_params` object of /inference/v1/generate (SamplingParams' own field
// names). Every key either reaches the engine request or is refused by name: stop strings and
// bad_words need a tokenizer to apply, structured outputs a grammar compiled against one, and
// the fields SamplingParams computes itself (`_eos_token_id`, output_text_buffer_length, ...)
// are the server's. `max_tokens`, `logprobs` and the transfer parameters are each API's own and
// are left to its parser.
//
// Pure functions: safe from any thread.
#ifndef VMETRICS_FRONTEND_SAMPLING_FIELDS_H_
#define VMETRICS_FRONTEND_SAMPLING_FIELDS_H_

#include "json_fields.h"
#include "vmetrics/engine_request.h"

namespace vmetrics::frontend {

enum class SamplingFieldSet : uint8_t {
  // CompletionRequest: logit_bias keys are strings made ints and biases clamped to [-100, 100]
  // (SamplingParams.from_optional); null means "unset" for every field.
  kCompletions,
  // SamplingParams as msgspec decodes it from JSON: also detokenize, flat_logprobs,
  // output_kind, skip_clone, skip_reading_prefix_cache and logprobs (extra_args, which the
  // transfer parameters join, is the caller's).
  kGenerate,
};

// Reads the keys above from `f` into `p`; a refusal names the field. Unknown keys of the
// objects inside (repetition_detection) are appended to `ignored`.
MaybeError ReadSamplingFields(JsonFields& f, SamplingFieldSet set, SamplingParams* p,
                              std::vector<std::string>* ignored);

// Why stop strings are refused (vLLM's message for a --tokens-only server).
inline constexpr const char* kNoStopStrings =
    "stop strings are not supported on a --tokens-only server because detokenization is "
    "disabled. Check stop strings on the coordinator, or use stop_token_ids.";

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_SAMPLING_FIELDS_H_
