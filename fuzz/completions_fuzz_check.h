// File: completions_fuzz_check.h
//
// The invariants of a POST /v1/completions body through ParseCompletionRequest, shared by the
// libFuzzer target (fuzz/completions_fuzz.cc) and the ctest replay of its corpus
// (tests/frontend/completions_corpus_replay_test.cc). Returns "" when they hold, else what broke:
//   - two parses give the same answer (the parser keeps no state);
//   - a refusal is a 400 (or 404 for another model) with a message, and its ErrorJson is a JSON
//     object whose error.message is that message;
//   - an accepted request keeps every limit the server promises: 1..max_prompts prompts, none
//     empty, token ids >= 0, max_tokens >= 1, n in 1..max_n, temperature >= 0, and every
//     prompt plus max_tokens within max_model_len; and a LoRA adapter only if `model` named one
//     of the server's (FuzzCompletionLimits has one, "fuzz-lora").
#ifndef VMETRICS_FUZZ_COMPLETIONS_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_COMPLETIONS_FUZZ_CHECK_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "completion_api.h"

namespace vmetrics::fuzz {

inline frontend::CompletionLimits FuzzCompletionLimits() {
  frontend::CompletionLimits limits;
  limits.max_model_len = 512;
  limits.served_model_name = "fuzz-model";
  limits.max_n = 8;
  limits.max_prompts = 16;
  limits.lora_modules = {{"fuzz-lora", "/adapters/fuzz-lora", 1}};
  return limits;
}

inline std::string CheckCompletionInvariants(std::string_view body) {
  const frontend::CompletionLimits limits = FuzzCompletionLimits();
  const frontend::ParsedCompletion a = frontend::ParseCompletionRequest(body, limits);
  const frontend::ParsedCompletion b = frontend::ParseCompletionRequest(body, limits);
  if (a.ok() != b.ok()) return "two parses disagree on acceptance";
  if (!a.ok()) {
    const frontend::ApiError& e = *a.error;
    if (e.status != b.error->status || e.message != b.error->message) {
      return "two parses give different errors";
    }
    if (e.status != 400 && e.status != 404)
      return "refusal with status " + std::to_string(e.status);
    if (e.message.empty()) return "refusal without a message";
    const nlohmann::json doc = nlohmann::json::parse(frontend::ErrorJson(e), nullptr, false);
    if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object() ||
        doc["error"].value("message", std::string()) != e.message) {
      return "ErrorJson is not {\"error\":{\"message\":...}} with the message";
    }
    return "";
  }
  const frontend::CompletionRequest& r = a.request;
  const frontend::CompletionRequest& s = b.request;
  if (r.prompts != s.prompts || r.max_tokens != s.max_tokens || r.n != s.n ||
      r.stream != s.stream || r.ignore_eos != s.ignore_eos || r.seed != s.seed ||
      r.lora.has_value() != s.lora.has_value()) {
    return "two parses accept different requests";
  }
  if (r.lora && (r.lora->name != "fuzz-lora" || r.lora->lora_int_id != 1)) {
    return "a LoRA adapter the server does not have accepted";
  }
  if (r.prompts.empty() || r.prompts.size() > limits.max_prompts) return "prompt count off limits";
  if (r.max_tokens < 1) return "max_tokens < 1 accepted";
  if (r.n < 1 || r.n > limits.max_n) return "n off limits accepted";
  if (!(r.temperature >= 0)) return "negative or NaN temperature accepted";
  for (const auto& prompt : r.prompts) {
    if (prompt.empty()) return "empty prompt accepted";
    for (const int64_t token : prompt) {
      if (token < 0) return "negative token id accepted";
    }
    if (static_cast<int64_t>(prompt.size()) > limits.max_model_len - r.max_tokens) {
      return "prompt + max_tokens above max_model_len accepted";
    }
  }
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_COMPLETIONS_FUZZ_CHECK_H_
