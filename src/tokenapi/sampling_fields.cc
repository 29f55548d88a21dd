// SPDX-License-Identifier: Apache-2.0
// The SamplingParams keys of a request; see sampling_fields.h.
#include "sampling_fields.h"

#include <algorithm>

namespace vmetrics::frontend {
namespace {

constexpr int64_t kMaxTokenId = INT32_MAX;

// A non-empty string or list of strings is a stop string list.
bool HasStrings(const Json* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_string()) return true;
  return !v->is_array() || !v->empty();
}

}  // namespace

MaybeError ReadSamplingFields(JsonFields& f, SamplingFieldSet set, SamplingParams* p,
                              std::vector<std::string>* ignored) {
  const bool generate = set == SamplingFieldSet::kGenerate;
  if (MaybeError e = f.Int("n", &p->n)) return e;
  if (MaybeError e = f.Double("presence_penalty", &p->presence_penalty)) return e;
  if (MaybeError e = f.Double("frequency_penalty", &p->frequency_penalty)) return e;
  if (MaybeError e = f.Double("repetition_penalty", &p->repetition_penalty)) return e;
  if (MaybeError e = f.Double("temperature", &p->temperature)) return e;
  if (MaybeError e = f.Double("top_p", &p->top_p)) return e;
  if (MaybeError e = f.Int("top_k", &p->top_k)) return e;
  if (MaybeError e = f.Double("min_p", &p->min_p)) return e;
  if (MaybeError e = f.OptInt("seed", &p->seed)) return e;
  if (const Json* stop = f.Get("stop"); HasStrings(stop)) {
    return f.Refuse("stop", kNoStopStrings);
  }
  if (MaybeError e = f.OptIntList("stop_token_ids", &p->stop_token_ids, 0, kMaxTokenId)) {
    return e;
  }
  if (MaybeError e = f.Bool("ignore_eos", &p->ignore_eos)) return e;
  if (MaybeError e = f.Int("min_tokens", &p->min_tokens)) return e;
  if (MaybeError e = f.OptInt("prompt_logprobs", &p->prompt_logprobs)) return e;
  if (MaybeError e = f.OptIntList("logprob_token_ids", &p->logprob_token_ids, 0, kMaxTokenId)) {
    return e;
  }
  if (MaybeError e = f.Bool("skip_special_tokens", &p->skip_special_tokens)) return e;
  if (MaybeError e = f.Bool("spaces_between_special_tokens", &p->spaces_between_special_tokens)) {
    return e;
  }
  if (MaybeError e = f.Bool("include_stop_str_in_output", &p->include_stop_str_in_output)) {
    return e;
  }
  if (MaybeError e = f.OptIntList("allowed_token_ids", &p->allowed_token_ids, 0, kMaxTokenId)) {
    return e;
  }
  if (const Json* bias = f.Get("logit_bias"); bias != nullptr && !bias->is_null()) {
    if (!bias->is_object()) {
      return f.Refuse("logit_bias", f.Name("logit_bias") + " must be an object");
    }
    std::vector<std::pair<int64_t, double>> out;
    std::vector<std::string> invalid;
    for (auto it = bias->begin(); it != bias->end(); ++it) {
      // JSON keys are strings; vLLM reads them as ints (int(token) in from_optional, msgspec's
      // dict[int, float] for generate).
      int64_t token = 0;
      const std::string& key = it.key();
      size_t used = 0;
      bool ok = !key.empty();
      try {
        token = std::stoll(key, &used);
      } catch (...) {
        ok = false;
      }
      if (!ok || used != key.size()) {
        invalid.push_back("'" + key + "'");
        continue;
      }
      if (!it.value().is_number()) {
        return f.Refuse("logit_bias", f.Name("logit_bias") + " values must be numbers");
      }
      double v = it.value().get<double>();
      if (!generate) v = std::clamp(v, -100.0, 100.0);
      out.emplace_back(token, v);
    }
    if (!invalid.empty()) {
      std::string list;
      for (size_t i = 0; i < invalid.size(); ++i) list += (i ? ", " : "") + invalid[i];
      return f.Refuse("logit_bias",
                      "logit_bias contains key(s) that cannot be converted to integer token IDs: "
                      "[" +
                          list + "]");
    }
    p->logit_bias = std::move(out);
  }
  if (const Json* words = f.Get("bad_words"); HasStrings(words)) {
    return f.Refuse("bad_words",
                    "bad_words are not supported: they are tokenized into token ids by the "
                    "frontend, and vmetrics has no tokenizer");
  }
  if (f.Has("structured_outputs")) {
    return f.Refuse("structured_outputs",
                    "Structured outputs requires a tokenizer so it can't be used with "
                    "'skip_tokenizer_init'");
  }
  if (const Json* r = f.Get("repetition_detection"); r != nullptr && !r->is_null()) {
    if (!r->is_object()) {
      return f.Refuse("repetition_detection", f.Name("repetition_detection") +
                                                  " must be an object with max_pattern_size, "
                                                  "min_pattern_size and min_count");
    }
    JsonFields rf(*r, f.Name("repetition_detection") + ".");
    RepetitionDetectionParams rd;
    if (MaybeError e = rf.Int("max_pattern_size", &rd.max_pattern_size)) return e;
    if (MaybeError e = rf.Int("min_pattern_size", &rd.min_pattern_size)) return e;
    if (MaybeError e = rf.Int("min_count", &rd.min_count)) return e;
    // RepetitionDetectionParams is a pydantic dataclass: other keys are ignored.
    if (MaybeError e = rf.SortUnread({}, ignored)) return e;
    p->repetition_detection = rd;
  }
  if (MaybeError e = f.OptInt("thinking_token_budget", &p->thinking_token_budget)) return e;
  if (MaybeError e = f.Int("routed_experts_prompt_start", &p->routed_experts_prompt_start)) {
    return e;
  }
  if (p->routed_experts_prompt_start < 0) {
    return f.Refuse("routed_experts_prompt_start",
                    f.Name("routed_experts_prompt_start") + " must be at least 0");
  }
  if (MaybeError e = f.OptInt("stream_interval", &p->stream_interval)) return e;
  if (!generate) return std::nullopt;

  // SamplingParams' own fields, settable through generate's sampling_params.
  if (MaybeError e = f.OptInt("logprobs", &p->logprobs)) return e;
  if (MaybeError e = f.Bool("detokenize", &p->detokenize)) return e;
  if (MaybeError e = f.Bool("flat_logprobs", &p->flat_logprobs)) return e;
  if (MaybeError e = f.Int("output_kind", &p->output_kind)) return e;
  if (p->output_kind < 0 || p->output_kind > 2) {
    return f.Refuse("output_kind",
                    f.Name("output_kind") + " must be 0 (CUMULATIVE), 1 (DELTA) or 2 (FINAL_ONLY)");
  }
  if (MaybeError e = f.Bool("skip_clone", &p->skip_clone)) return e;
  if (MaybeError e = f.OptBool("skip_reading_prefix_cache", &p->skip_reading_prefix_cache)) {
    return e;
  }
  // The fields SamplingParams computes that start with "_" (_eos_token_id, ...) are not
  // fields of vLLM's request model: left unread, they are ignored as vLLM ignores them.
  if (f.Get("output_text_buffer_length") != nullptr) {
    return f.Refuse("output_text_buffer_length",
                    f.Name("output_text_buffer_length") +
                        " is computed by the server (for stop strings), not set by a request");
  }
  return std::nullopt;
}

}  // namespace vmetrics::frontend
