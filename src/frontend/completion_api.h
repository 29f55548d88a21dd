// File: completion_api.h
//
// The OpenAI completions API as vmetrics speaks it, token ids in and out: parsing and checking
// a POST /v1/completions body (ParseCompletionRequest) and writing the JSON vLLM's
// OpenAI-compatible server answers with — the whole response, one server-sent-event chunk,
// and the error body. vmetrics has no tokenizer, so prompts are lists of token ids and
// choices carry `token_ids` with an empty `text`.
//
// Pure functions, no state: safe from any thread.
//
// Example:
//   CompletionLimits limits{.max_model_len = 8192, .served_model_name = "m"};
//   ParsedCompletion p = ParseCompletionRequest(R"({"prompt":[1,2,3],"max_tokens":4})", limits);
//   ASSERT_TRUE(p.ok());
//   EXPECT_EQ(p.request.prompts[0].size(), 3u);
#ifndef VMETRICS_FRONTEND_COMPLETION_API_H_
#define VMETRICS_FRONTEND_COMPLETION_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/frontend.h"  // LoraModule

namespace vmetrics::frontend {

// What the server allows.
struct CompletionLimits {
  int64_t max_model_len = 8192;   // prompt + max_tokens must fit (vLLM's check)
  std::string served_model_name;  // `model`, when given, must be this or a LoRA module's name
  std::vector<LoraModule> lora_modules;
  int64_t max_n = 128;        // choices per prompt
  size_t max_prompts = 1024;  // prompts per request (a list of lists)
};

// A checked request.
struct CompletionRequest {
  std::vector<std::vector<int64_t>> prompts;  // one or more prompts of token ids
  int64_t max_tokens = 16;                    // OpenAI's default
  int64_t n = 1;
  double temperature = 1.0;
  std::optional<int64_t> seed;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a usage chunk before [DONE]
  bool ignore_eos = false;
  std::optional<LoraModule> lora;  // the module `model` named; unset = the base model
};

// An error answer: HTTP status, OpenAI error type, message.
struct ApiError {
  unsigned status = 400;
  std::string type = "BadRequestError";
  std::string message;
};

struct ParsedCompletion {
  CompletionRequest request;
  std::optional<ApiError> error;  // set when the body was refused
  bool ok() const { return !error.has_value(); }
};

// ParseCompletionRequest
//
// Checks a request body. Refused, with a 400 and a message naming the field: invalid JSON or
// not an object; a missing prompt; a text prompt (tokenization is not part of vmetrics); an
// empty prompt, a token id that is not a non-negative integer, more than max_prompts prompts;
// max_tokens < 1, n outside 1..max_n, a negative temperature, a field of the wrong type;
// prompt + max_tokens above max_model_len. A `model` other than the served one or a LoRA
// module's name is 404, as from vLLM. Unknown fields are ignored.
ParsedCompletion ParseCompletionRequest(std::string_view body, const CompletionLimits& limits);

// The OpenAI error body, as vLLM's ErrorResponse writes it:
// {"error":{"code","message","param":null,"type"}}.
//
// Example:
//   EXPECT_EQ(ErrorJson({400, "BadRequestError", "bad n"}),
//             R"({"error":{"code":400,"message":"bad n","param":null,"type":"BadRequestError"}})");
std::string ErrorJson(const ApiError& error);

// The OpenAI error type vLLM gives an HTTP status it answers on its own (413 and other 4xx:
// "BadRequestError", 500: "InternalServerError", 503: "ServiceUnavailableError").
std::string ErrorType(unsigned status);

// One finished choice, in index order (prompt p, sample i has index p * n + i).
struct CompletionChoice {
  std::vector<int64_t> token_ids;
  std::string finish_reason;  // "length", "stop", "abort", "error"
};

// Identity of a response: `id` ("cmpl-..."), `created` (Unix seconds), `model`.
struct CompletionIdentity {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// The non-streamed response: {"id","object":"text_completion","created","model","choices":[
// {"index","text":"","token_ids",...,"finish_reason"}],"usage":{...}}.
std::string CompletionResponseJson(const CompletionIdentity& identity,
                                   const std::vector<CompletionChoice>& choices,
                                   int64_t prompt_tokens);

// One server-sent event with a choice's new tokens (and its finish reason on the last one):
// "data: {...}\n\n".
std::string CompletionChunkEvent(const CompletionIdentity& identity, size_t index,
                                 const std::vector<int64_t>& token_ids,
                                 const std::optional<std::string>& finish_reason);

// The usage event of stream_options.include_usage (choices empty).
std::string UsageChunkEvent(const CompletionIdentity& identity, int64_t prompt_tokens,
                            int64_t completion_tokens);

// An error inside a stream: "data: {"error":{...}}\n\n", as vLLM sends it.
std::string ErrorEvent(const ApiError& error);

// The last event of every stream.
inline constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_COMPLETION_API_H_
