// SPDX-License-Identifier: Apache-2.0
// File: completions_fuzz_check.h
//
// The invariants of a POST /v1/completions or /inference/v1/generate body through
// ParseCompletionRequest and ParseGenerateRequest, shared by the
// libFuzzer target (fuzz/completions_fuzz.cc) and the ctest replay of its corpus
// (tests/frontend/completions_corpus_replay_test.cc). Returns "" when they hold, else what broke:
//   - two parses give the same answer (the parser keeps no state);
//   - a refusal is a 400 (or 404 for another model) with a message, and its ErrorJson is a JSON
//     object whose error.message is that message;
//   - an accepted request keeps every limit the server promises: 1..max_prompts prompts, none
//     empty, token ids within the vocabulary, max_tokens >= 1 (0 only for echo), n in 1..max_n,
//     temperature >= 0, min_tokens within max_tokens, and every
//     prompt plus max_tokens within max_model_len; a LoRA adapter only if `model` named one
//     of the server's (FuzzCompletionLimits has one, "fuzz-lora"); and extra_args (the JSON
//     fields that reach the engine as msgpack) nested at most kMaxJsonNestingDepth deep inside
//     its map: read back with that bound, it re-encodes to the same bytes;
//   - what reaches an engine is readable by it: max_tokens is set (an engine cannot run a
//     request without it), and the ADD of the first prompt, encoded for every wire generation
//     whose table carries the request (CheckRequestFits) and for the layout the four
//     generations a handshake cannot tell apart share, decodes under each of those
//     generations' strict decoders to the same prompt and max_tokens.
#ifndef VMETRICS_FUZZ_COMPLETIONS_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_COMPLETIONS_FUZZ_CHECK_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "completion_api.h"
#include "generate_api.h"
#include "json_fields.h"
#include "msgpack_from_json.h"
#include "vmetrics/engine_request.h"
#include "vmetrics/internal/json_from_msgpack.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::fuzz {

inline frontend::ServingConfig FuzzCompletionLimits() {
  frontend::ServingConfig limits;
  limits.max_model_len = 512;
  limits.served_model_name = "fuzz-model";
  limits.max_n = 8;
  limits.max_prompts = 16;
  limits.lora_modules = {{"fuzz-lora", "/adapters/fuzz-lora", 1}};
  limits.generation.eos_token_id = 2;
  limits.generation.vocab_size = 1000;
  return limits;
}

// The invariants of one parser (ParseCompletionRequest or ParseGenerateRequest) on `body`.
template <typename Parse>
std::string CheckTokenRequestInvariants(std::string_view body, Parse parse) {
  const frontend::ServingConfig limits = FuzzCompletionLimits();
  const frontend::ParsedRequest a = parse(body, limits);
  const frontend::ParsedRequest b = parse(body, limits);
  if (a.ok() != b.ok()) return "two parses disagree on acceptance";
  if (!a.ok()) {
    const frontend::ApiError& e = *a.error;
    if (e.status != b.error->status || e.message != b.error->message || e.param != b.error->param) {
      return "two parses give different errors";
    }
    if (e.status != 400 && e.status != 404)
      return "refusal with status " + std::to_string(e.status);
    if (e.message.empty()) return "refusal without a message";
    const nlohmann::json doc = nlohmann::json::parse(frontend::ErrorJson(e), nullptr, false);
    if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object() ||
        doc["error"].value("message", std::string()) != e.message ||
        doc["error"].value("code", 0) != static_cast<int>(e.status)) {
      return "ErrorJson is not {\"error\":{\"message\",\"code\"...}} with the message";
    }
    return "";
  }
  const frontend::TokenRequest& r = a.request;
  const frontend::TokenRequest& s = b.request;
  const SamplingParams& p = r.sampling;
  if (r.prompts != s.prompts || p.max_tokens != s.sampling.max_tokens || p.n != s.sampling.n ||
      r.stream != s.stream || p.ignore_eos != s.sampling.ignore_eos || p.seed != s.sampling.seed ||
      p.extra_args != s.sampling.extra_args || r.lora.has_value() != s.lora.has_value()) {
    return "two parses accept different requests";
  }
  if (r.lora && (r.lora->name != "fuzz-lora" || r.lora->lora_int_id != 1)) {
    return "a LoRA adapter the server does not have accepted";
  }
  if (!p.extra_args.empty()) {
    // The map of fields, then each field's own levels: deeper ones read back as "<too deep>".
    const Result<nlohmann::ordered_json> back =
        protocol::MsgpackToJson(p.extra_args, static_cast<int>(frontend::kMaxJsonNestingDepth) + 1);
    if (!back.ok()) return "extra_args is not msgpack";
    if (frontend::MsgpackFromJson(back.value()) != p.extra_args) {
      return "extra_args nested deeper than kMaxJsonNestingDepth accepted";
    }
  }
  if (r.prompts.empty() || r.prompts.size() > limits.max_prompts) return "prompt count off limits";
  const int64_t min_max_tokens = r.echo_without_generation ? 0 : 1;
  if (p.max_tokens && *p.max_tokens < min_max_tokens) return "max_tokens < 1 accepted";
  if (p.n < 1 || p.n > limits.max_n) return "n off limits accepted";
  if (!(p.temperature >= 0)) return "negative or NaN temperature accepted";
  if (p.min_tokens < 0 || (p.max_tokens && p.min_tokens > *p.max_tokens)) {
    return "min_tokens off limits accepted";
  }
  for (const auto& prompt : r.prompts) {
    if (prompt.empty()) return "empty prompt accepted";
    for (const int64_t token : prompt) {
      if (token < 0 || token >= *limits.generation.vocab_size) {
        return "token id outside the vocabulary accepted";
      }
    }
    if (p.max_tokens &&
        static_cast<int64_t>(prompt.size()) > limits.max_model_len - *p.max_tokens) {
      return "prompt + max_tokens above max_model_len accepted";
    }
  }
  if (!p.max_tokens) return "accepted without max_tokens: an engine cannot run it";
  EngineCoreRequestSpec spec;
  spec.request_id = "cmpl-fuzz-0-00000000";
  spec.prompt_token_ids = r.prompts[0];
  spec.sampling = p;
  spec.sampling.n = 1;
  spec.eos_token_id = limits.generation.eos_token_id;
  spec.arrival_time = 1767225600.25;
  spec.external_req_id = "cmpl-fuzz-0";
  if (r.lora) {
    spec.lora_name = r.lora->name;
    spec.lora_int_id = r.lora->lora_int_id;
    spec.lora_path = r.lora->path;
  }
  spec.cache_salt = r.cache_salt;
  spec.priority = r.priority;
  spec.session_id = r.session_id;
  auto readable = [&spec](const RequestLayout& encoded_as, const RequestLayout& decoder,
                          const std::string& name) -> std::string {
    Result<EngineCoreRequestSpec> back =
        DecodeEngineCoreRequest(EncodeEngineCoreRequest(spec, encoded_as), decoder);
    if (!back.ok()) return "its ADD is refused by " + name + ": " + back.status().message();
    if (back->prompt_token_ids != spec.prompt_token_ids ||
        back->sampling.max_tokens != spec.sampling.max_tokens) {
      return "its ADD reads as another request under " + name;
    }
    return "";
  };
  for (const WireGeneration& g : WireGenerations()) {
    if (!CheckRequestFits(spec, g.request).ok()) continue;
    if (std::string why = readable(g.request, g.request, std::string(g.name)); !why.empty()) {
      return why;
    }
  }
  uint32_t old = 0;
  for (const char* name : {"g20250927", "g20251105", "g20260112", "g20260204"}) {
    old |= uint32_t{1} << WireGenerationIndex(*FindWireGeneration(name));
  }
  const Result<EngineRequestLayout> common = RequestLayoutFor(old);
  if (!common.ok()) return "no common layout for the four oldest generations";
  if (CheckRequestFits(spec, common->view()).ok()) {
    for (const char* name : {"g20250927", "g20251105", "g20260112", "g20260204"}) {
      const WireGeneration& g = *FindWireGeneration(name);
      if (std::string why =
              readable(common->view(), g.request, "common layout, " + std::string(name));
          !why.empty()) {
        return why;
      }
    }
  }
  return "";
}

// Both token APIs' parsers on the same body (the corpus serves both).
inline std::string CheckCompletionInvariants(std::string_view body) {
  std::string why = CheckTokenRequestInvariants(body, [](std::string_view b, const auto& c) {
    return frontend::ParseCompletionRequest(b, c);
  });
  if (!why.empty()) return "completions: " + why;
  why = CheckTokenRequestInvariants(
      body, [](std::string_view b, const auto& c) { return frontend::ParseGenerateRequest(b, c); });
  if (!why.empty()) return "generate: " + why;
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_COMPLETIONS_FUZZ_CHECK_H_
