// SPDX-License-Identifier: Apache-2.0
// vLLM's SamplingParams rules; see sampling_rules.h.
#include "sampling_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace vmetrics::frontend {
namespace {

// vllm/sampling_params.py: _MAX_TEMP (the smallest temperature kept) and _SAMPLING_EPS (below
// it sampling is greedy).
constexpr double kMinTemperature = 1e-2;
constexpr double kSamplingEps = 1e-5;
constexpr size_t kMaxLogprobTokenIds = 128;

std::string Num(double v) {
  // Python's str(float) for the values these messages quote.
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e16) {
    return std::to_string(static_cast<int64_t>(v)) + ".0";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Shortest representation that reads back the same value.
  for (int precision = 1; precision <= 17; ++precision) {
    char candidate[32];
    std::snprintf(candidate, sizeof candidate, "%.*g", precision, v);
    if (std::strtod(candidate, nullptr) == v) return candidate;
  }
  return buf;
}

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool InVocab(const ServingConfig& c, int64_t t) {
  return t >= 0 && (!c.generation.vocab_size || t < *c.generation.vocab_size);
}

}  // namespace

std::optional<ApiError> FinishSamplingParams(const ServingConfig& config, SamplingParams* p,
                                             const std::string& prefix) {
  auto refuse = [&](std::string message, const char* field) {
    return std::optional<ApiError>(BadRequest(std::move(message), prefix + field));
  };
  // __post_init__, before the checks.
  if (p->temperature > 0 && p->temperature < kMinTemperature) p->temperature = kMinTemperature;
  if (p->seed == -1) p->seed.reset();
  if (p->thinking_token_budget == -1) p->thinking_token_budget.reset();
  if (!p->stop) p->stop.emplace();
  if (!p->stop_token_ids) p->stop_token_ids.emplace();
  {
    std::vector<int64_t> unique;
    for (int64_t t : *p->stop_token_ids) {
      if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(t);
    }
    *p->stop_token_ids = std::move(unique);
  }
  if (!p->bad_words) p->bad_words.emplace();

  // _verify_args.
  if (p->n < 1) return refuse("n must be at least 1, got " + std::to_string(p->n) + ".", "n");
  if (p->n > config.max_n) {
    return refuse(
        "n must be at most " + std::to_string(config.max_n) + ", got " + std::to_string(p->n) + ".",
        "n");
  }
  if (!(p->presence_penalty >= -2.0 && p->presence_penalty <= 2.0)) {
    return refuse("presence_penalty must be in [-2, 2], got " + Num(p->presence_penalty) + ".",
                  "presence_penalty");
  }
  if (!(p->frequency_penalty >= -2.0 && p->frequency_penalty <= 2.0)) {
    return refuse("frequency_penalty must be in [-2, 2], got " + Num(p->frequency_penalty) + ".",
                  "frequency_penalty");
  }
  if (!std::isfinite(p->repetition_penalty)) {
    return refuse(
        "repetition_penalty must be a finite number, got " + Num(p->repetition_penalty) + ".",
        "repetition_penalty");
  }
  if (p->repetition_penalty <= 0.0) {
    return refuse(
        "repetition_penalty must be greater than zero, got " + Num(p->repetition_penalty) + ".",
        "repetition_penalty");
  }
  if (!std::isfinite(p->temperature)) {
    return refuse("temperature must be a finite number, got " + Num(p->temperature) + ".",
                  "temperature");
  }
  if (p->temperature < 0.0) {
    return refuse("temperature must be non-negative, got " + Num(p->temperature) + ".",
                  "temperature");
  }
  if (p->temperature > 2.0) {
    return refuse("temperature must be in [0, 2], got " + Num(p->temperature) + ".", "temperature");
  }
  if (!(p->top_p > 0.0 && p->top_p <= 1.0)) {
    return refuse("top_p must be in (0, 1], got " + Num(p->top_p) + ".", "top_p");
  }
  if (p->top_k < -1) {
    return refuse("top_k must be 0 (disable), or at least 1, got " + std::to_string(p->top_k) + ".",
                  "top_k");
  }
  if (!(p->min_p >= 0.0 && p->min_p <= 1.0)) {
    return refuse("min_p must be in [0, 1], got " + Num(p->min_p) + ".", "min_p");
  }
  if (p->max_tokens && *p->max_tokens < 1) {
    return refuse("max_tokens must be at least 1, got " + std::to_string(*p->max_tokens) + ".",
                  "max_tokens");
  }
  if (p->min_tokens < 0) {
    return refuse(
        "min_tokens must be greater than or equal to 0, got " + std::to_string(p->min_tokens) + ".",
        "min_tokens");
  }
  if (p->max_tokens && p->min_tokens > *p->max_tokens) {
    return refuse(
        "min_tokens must be less than or equal to max_tokens=" + std::to_string(*p->max_tokens) +
            ", got " + std::to_string(p->min_tokens) + ".",
        "min_tokens");
  }
  if (p->stream_interval && *p->stream_interval < 1) {
    return refuse(
        "stream_interval must be at least 1, got " + std::to_string(*p->stream_interval) + ".",
        "stream_interval");
  }
  if (p->logprobs && *p->logprobs != -1 && *p->logprobs < 0) {
    return refuse("logprobs must be non-negative or -1, got " + std::to_string(*p->logprobs) + ".",
                  "logprobs");
  }
  if (p->prompt_logprobs && *p->prompt_logprobs != -1 && *p->prompt_logprobs < 0) {
    return refuse("prompt_logprobs must be non-negative or -1, got " +
                      std::to_string(*p->prompt_logprobs) + ".",
                  "prompt_logprobs");
  }
  if (p->thinking_token_budget && *p->thinking_token_budget < 0) {
    return refuse("thinking_token_budget must be a non-negative integer or -1, got " +
                      std::to_string(*p->thinking_token_budget) + ".",
                  "thinking_token_budget");
  }
  if (p->repetition_detection) {
    const RepetitionDetectionParams& r = *p->repetition_detection;
    if (r.max_pattern_size < 0 || r.min_pattern_size < 0 ||
        r.min_pattern_size > r.max_pattern_size) {
      return refuse(
          "max_pattern_size, min_pattern_size must be >=0, with min_pattern_size <= "
          "max_pattern_size. Set both to 0 to disable repetitive pattern detection.",
          "repetition_detection");
    }
    if (r.max_pattern_size > 0 && r.min_count < 2) {
      return refuse(
          "min_count must be >= 2 to detect repetitive patterns in engine output. If you do not "
          "wish to detect repetitive patterns, set max_pattern_size to 0.",
          "repetition_detection");
    }
  }
  if (p->temperature < kSamplingEps) {
    // Zero temperature means greedy sampling.
    p->top_p = 1.0;
    p->top_k = 0;
    p->min_p = 0.0;
    if (p->n > 1) {
      return refuse("n must be 1 when using greedy sampling, got " + std::to_string(p->n) + ".",
                    "n");
    }
  }
  if (!p->skip_reading_prefix_cache) {
    // With prefix caching, a cached prompt has fewer positions to score: prompt logprobs
    // read nothing from the cache.
    p->skip_reading_prefix_cache = p->prompt_logprobs.has_value();
  }

  // The engine's configuration (InputProcessor._validate_params).
  const int64_t vocab = config.generation.vocab_size.value_or(-1);
  auto over_max = [&](int64_t asked) {
    if (config.max_logprobs < 0) return false;
    if (asked == -1) return vocab < 0 || vocab > config.max_logprobs;
    return asked > config.max_logprobs;
  };
  if (p->logprobs && over_max(*p->logprobs)) {
    return refuse("Requested sample logprobs of " + std::to_string(*p->logprobs) +
                      ", which is greater than max allowed: " + std::to_string(config.max_logprobs),
                  "logprobs");
  }
  if (p->prompt_logprobs && over_max(*p->prompt_logprobs)) {
    return refuse("Requested prompt logprobs of " + std::to_string(*p->prompt_logprobs) +
                      ", which is greater than max allowed: " + std::to_string(config.max_logprobs),
                  "prompt_logprobs");
  }
  if (p->logprob_token_ids) {
    const std::vector<int64_t>& ids = *p->logprob_token_ids;
    if (ids.empty()) {
      return refuse("`logprob_token_ids` must not be an empty list.", "logprob_token_ids");
    }
    if (ids.size() > kMaxLogprobTokenIds) {
      return refuse("logprob_token_ids can hold at most " + std::to_string(kMaxLogprobTokenIds) +
                        " token ids, got " + std::to_string(ids.size()) + ".",
                    "logprob_token_ids");
    }
    for (int64_t t : ids) {
      if (!InVocab(config, t)) {
        return refuse("logprob_token_ids contains out-of-vocab token id " + std::to_string(t) + ".",
                      "logprob_token_ids");
      }
    }
  }
  for (int64_t t : *p->stop_token_ids) {
    if (!InVocab(config, t)) {
      return refuse("stop_token_ids contains out-of-vocab token id " + std::to_string(t) + ".",
                    "stop_token_ids");
    }
  }
  if (p->allowed_token_ids) {
    if (p->allowed_token_ids->empty()) {
      return refuse("allowed_token_ids is not None and empty!", "allowed_token_ids");
    }
    for (int64_t t : *p->allowed_token_ids) {
      if (!InVocab(config, t)) {
        return refuse("allowed_token_ids contains out-of-vocab token id!", "allowed_token_ids");
      }
    }
  }
  if (p->logit_bias) {
    std::vector<int64_t> invalid;
    for (const auto& [t, bias] : *p->logit_bias) {
      if (!InVocab(config, t)) invalid.push_back(t);
    }
    if (!invalid.empty()) {
      return refuse("token_id(s) " + Ints(invalid) +
                        " in logit_bias contain out-of-vocab token ids. Vocabulary size: " +
                        std::to_string(vocab),
                    "logit_bias");
    }
  }

  // __post_init__ (the stop ids), then update_from_generation_config with the tokenizer's EOS
  // and the generation config's: `_all_stop_token_ids` keeps the order the ids were added in,
  // which decides the order a Python set of them is written in (PythonSetOrder).
  std::vector<int64_t> all_stop = p->all_stop_token_ids;
  auto add = [&all_stop](int64_t t) {
    if (std::find(all_stop.begin(), all_stop.end(), t) == all_stop.end()) all_stop.push_back(t);
  };
  for (int64_t t : *p->stop_token_ids) add(t);
  const std::optional<int64_t> eos = config.generation.eos_token_id;
  if (!p->ignore_eos) p->eos_token_id = eos;
  if (eos) add(*eos);
  std::set<int64_t> eos_ids(config.generation.generation_eos_token_ids.begin(),
                            config.generation.generation_eos_token_ids.end());
  if (eos) eos_ids.erase(*eos);
  if (!eos_ids.empty()) {
    for (int64_t t : eos_ids) add(t);
    if (!p->ignore_eos) {
      eos_ids.insert(p->stop_token_ids->begin(), p->stop_token_ids->end());
      p->stop_token_ids->assign(eos_ids.begin(), eos_ids.end());
    }
  }
  p->all_stop_token_ids = std::move(all_stop);
  return std::nullopt;
}

std::optional<ApiError> CheckPromptTokens(const ServingConfig& config,
                                          const std::vector<int64_t>& prompt,
                                          const std::string& param) {
  for (int64_t t : prompt) {
    if (!InVocab(config, t)) {
      return BadRequest("Token id " + std::to_string(t) + " is out of vocabulary", param);
    }
  }
  return std::nullopt;
}

std::optional<ApiError> CheckContextLength(const ServingConfig& config, int64_t prompt_len,
                                           int64_t max_tokens) {
  if (max_tokens <= config.max_model_len && prompt_len + max_tokens <= config.max_model_len) {
    return std::nullopt;
  }
  return BadRequest("This model's maximum context length is " +
                    std::to_string(config.max_model_len) + " tokens. However, you requested " +
                    std::to_string(prompt_len + max_tokens) + " tokens (" +
                    std::to_string(prompt_len) + " in the messages, " + std::to_string(max_tokens) +
                    " in the completion). Please reduce the length of the messages or "
                    "completion.");
}

}  // namespace vmetrics::frontend
