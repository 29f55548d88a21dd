// SPDX-License-Identifier: Apache-2.0
// POST /inference/v1/generate: parsing and answers; see generate_api.h.
#include "generate_api.h"

#include <algorithm>
#include <utility>

#include "api_common.h"
#include "json_fields.h"
#include "msgpack_from_json.h"
#include "sampling_fields.h"
#include "sampling_rules.h"
#include "vllm_request_fields.h"

namespace vmetrics::frontend {

ParsedRequest ParseGenerateRequest(std::string_view body, const ServingConfig& config) {
  const Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  JsonFields f(doc, "");
  ParsedRequest parsed = StartTokenRequest(doc, f, config, TokenApi::kGenerate);
  if (!parsed.ok()) return parsed;
  TokenRequest& r = parsed.request;
  if (MaybeError e = f.Str("request_id", &r.request_id)) return Refuse(*e);
  if (MaybeError e = CheckClientId(r.request_id, "request_id")) return Refuse(*e);

  const Json* ids = f.Get("token_ids");
  if (ids == nullptr || ids->is_null()) {
    return Refuse(f.Refuse("token_ids", "token_ids is required"));
  }
  if (!ids->is_array())
    return Refuse(f.Refuse("token_ids", "token_ids must be a list of integers"));
  if (ids->empty()) {
    return Refuse(f.Refuse("token_ids", "token_ids must contain at least one token ID."));
  }
  std::vector<int64_t> prompt;
  prompt.reserve(ids->size());
  for (const Json& t : *ids) {
    std::optional<int64_t> id = JsonInt(t);
    if (!id) return Refuse(f.Refuse("token_ids", "token_ids must be a list of integers"));
    if (*id < 0) {
      return Refuse(f.Refuse("token_ids", "token_ids must not contain negative values"));
    }
    if (*id > INT32_MAX) {
      return Refuse(f.Refuse("token_ids", "token ids must be between 0 and 2147483647"));
    }
    prompt.push_back(*id);
  }
  if (MaybeError e = CheckPromptTokens(config, prompt, "token_ids")) return Refuse(*e);
  r.prompts.push_back(std::move(prompt));
  const auto prompt_len = static_cast<int64_t>(r.prompts[0].size());

  for (const char* multimodal : {"features", "content_parts"}) {
    if (f.Has(multimodal)) {
      return Refuse(f.Refuse(multimodal, std::string(multimodal) +
                                             " (multimodal inputs) are not supported: vmetrics "
                                             "sends token ids only"));
    }
  }
  // The render step's metadata about the prompt; generation does not read them (vLLM's server
  // neither).
  (void)f.Get("token_offsets");
  (void)f.Get("assistant_tokens_mask");

  const Json* sp = f.Get("sampling_params");
  if (sp == nullptr || sp->is_null()) {
    return Refuse(f.Refuse("sampling_params", "sampling_params is required"));
  }
  if (!sp->is_object()) {
    return Refuse(f.Refuse("sampling_params", "sampling_params must be an object"));
  }
  SamplingParams& p = r.sampling;
  JsonFields s(*sp, "sampling_params.");
  if (MaybeError e =
          ReadSamplingFields(s, SamplingFieldSet::kGenerate, &p, &parsed.ignored_fields)) {
    return Refuse(*e);
  }
  // max_tokens: omitted (not 16, SamplingParams' default) means the rest of the context.
  const Json* max_tokens = s.Get("max_tokens");
  const bool max_tokens_given = max_tokens != nullptr;
  if (max_tokens_given) {
    if (MaybeError e = s.OptInt("max_tokens", &p.max_tokens)) return Refuse(*e);
  }
  const Json* extra = nullptr;
  if (MaybeError e = s.OptObject("extra_args", &extra)) return Refuse(*e);
  if (MaybeError e = s.SortUnread(kSamplingParamsFields, &parsed.ignored_fields)) {
    return Refuse(*e);
  }

  if (MaybeError e = f.Bool("stream", &r.stream)) return Refuse(*e);
  if (MaybeError e = ReadStreamOptions(f, &r, &parsed.ignored_fields)) return Refuse(*e);
  if (f.Has("stream_options") && !r.stream) {
    return Refuse(
        f.Refuse("stream_options", "stream_options are only supported when stream=true."));
  }
  if (MaybeError e = f.OptStr("cache_salt", &r.cache_salt)) return Refuse(*e);
  if (MaybeError e = CheckCacheSalt(r.cache_salt)) return Refuse(*e);
  if (MaybeError e = f.Int("priority", &r.priority)) return Refuse(*e);
  const Json* kv = nullptr;
  const Json* ec = nullptr;
  if (MaybeError e = f.OptObject("kv_transfer_params", &kv)) return Refuse(*e);
  if (MaybeError e = f.OptObject("ec_transfer_params", &ec)) return Refuse(*e);
  std::optional<bool> return_token_ids;
  if (MaybeError e = f.OptBool("return_token_ids", &return_token_ids)) return Refuse(*e);
  r.return_token_ids = return_token_ids.value_or(false);
  std::optional<std::string> output_mode;
  if (MaybeError e = f.OptStr("output_mode", &output_mode)) return Refuse(*e);
  if (output_mode && *output_mode != "tokens") {
    return Refuse(
        f.Refuse("output_mode", "output_mode \"" + *output_mode +
                                    "\" is not supported: a tokens-only server answers with token "
                                    "ids (output_mode \"tokens\")"));
  }
  if (MaybeError e = f.SortUnread(kGenerateRequestFields, &parsed.ignored_fields)) {
    return Refuse(*e);
  }

  if (p.prompt_logprobs && r.stream) {
    return Refuse(s.Refuse("prompt_logprobs",
                           "`prompt_logprobs` are not available when "
                           "`stream=true`."));
  }
  if (!max_tokens_given) {
    // get_max_tokens(max_model_len, None, prompt length, defaults): the room left, at most the
    // generation config's max_new_tokens.
    if (prompt_len >= config.max_model_len) {
      return Refuse(f.Refuse("token_ids", "Input length (" + std::to_string(prompt_len) +
                                              ") exceeds model's maximum context length (" +
                                              std::to_string(config.max_model_len) + ")."));
    }
    int64_t room = config.max_model_len - prompt_len;
    if (config.generation.max_tokens) room = std::min(room, *config.generation.max_tokens);
    p.max_tokens = room;
  } else if (!p.max_tokens) {
    // An explicit null counts as given (GenerateRequest.is_sampling_param_provided), so no
    // generation-config default applies; InputProcessor then takes the room left (vllm
    // v1/engine/input_processor.py at 6adad087). An engine cannot run a request without it.
    if (prompt_len >= config.max_model_len) {
      ApiError error = *CheckContextLength(config, prompt_len, 1);
      error.param = "sampling_params.max_tokens";
      return Refuse(error);
    }
    p.max_tokens = config.max_model_len - prompt_len;
  } else {
    if (*p.max_tokens >= 1) {
      if (MaybeError e = CheckContextLength(config, prompt_len, *p.max_tokens)) {
        ApiError error = *e;
        error.param = "sampling_params.max_tokens";
        return Refuse(error);
      }
    }
  }
  p.detokenize = false;  // a --tokens-only server
  if (r.stream) {
    p.output_kind = 1;  // DELTA
  } else if (sp->find("output_kind") == sp->end()) {
    p.output_kind = 2;  // FINAL_ONLY: every choice of n > 1 comes back
  }
  std::vector<std::pair<std::string, const Json*>> entries;
  if (extra != nullptr) {
    for (auto it = extra->begin(); it != extra->end(); ++it) entries.emplace_back(it.key(), &*it);
  }
  auto put = [&entries](const char* key, const Json* value) {
    if (value == nullptr || value->empty()) return;
    for (auto& [k, v] : entries) {
      if (k == key) {
        v = value;
        return;
      }
    }
    entries.emplace_back(key, value);
  };
  put("kv_transfer_params", kv);
  put("ec_transfer_params", ec);
  if (!entries.empty() || extra != nullptr) p.extra_args = MsgpackMapFromJson(entries);
  if (MaybeError e = FinishSamplingParams(config, &p, "sampling_params.")) return Refuse(*e);
  r.response_logprobs = p.logprobs;
  return parsed;
}

namespace {

std::string TokenString(int64_t id) { return "token_id:" + std::to_string(id); }

// vLLM's _create_tokens_logprobs: ChatCompletionLogProbs with "token_id:<id>" tokens; the top
// list is the first max(k, 1) entries of the position's map (the sampled token's first).
Json TokenLogprobs(const std::vector<int64_t>& token_ids,
                   const std::vector<std::optional<PositionLogprobs>>& positions, int64_t k) {
  Json content = Json::array();
  for (size_t i = 0; i < token_ids.size(); ++i) {
    const Logprob* own = nullptr;
    if (i < positions.size() && positions[i]) own = FindLogprob(*positions[i], token_ids[i]);
    Json entry{{"token", TokenString(token_ids[i])},
               {"logprob", -9999.0},
               {"bytes", nullptr},
               {"top_logprobs", Json::array()}};
    if (own != nullptr) {
      entry["logprob"] = ClampLogprob(own->logprob);
      const size_t top =
          k < 0 ? positions[i]->size() : static_cast<size_t>(std::max<int64_t>(k, 1));
      for (size_t j = 0; j < positions[i]->size() && j < top; ++j) {
        const Logprob& e = (*positions[i])[j];
        entry["top_logprobs"].push_back(Json{{"token", TokenString(e.token_id)},
                                             {"logprob", ClampLogprob(e.logprob)},
                                             {"bytes", nullptr}});
      }
    }
    content.push_back(std::move(entry));
  }
  return Json{{"content", std::move(content)}};
}

Json UsageJson(const ServingConfig& config, const PromptState& prompt,
               const std::vector<ChoiceState>& choices, bool with_nulls) {
  const auto prompt_tokens = static_cast<int64_t>(prompt.token_ids.size());
  int64_t completion_tokens = 0;
  for (const ChoiceState& c : choices) {
    completion_tokens += static_cast<int64_t>(c.token_ids.size());
  }
  Json usage{{"prompt_tokens", prompt_tokens},
             {"total_tokens", prompt_tokens + completion_tokens},
             {"completion_tokens", completion_tokens}};
  if (with_nulls) usage["prompt_tokens_details"] = nullptr;
  if (config.enable_prompt_tokens_details && prompt.cached_tokens) {
    usage["prompt_tokens_details"] = Json{{"cached_tokens", *prompt.cached_tokens}};
  }
  return usage;
}

}  // namespace

std::string GenerateResponseJson(const ServingConfig& config, const TokenRequest& r,
                                 const ResponseIdentity& identity, const PromptState& prompt,
                                 const std::vector<ChoiceState>& choices) {
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceState& c = choices[i];
    Json logprobs = nullptr;
    if (r.response_logprobs)
      logprobs = TokenLogprobs(c.token_ids, c.logprobs, *r.response_logprobs);
    Json choice{{"index", i},
                {"logprobs", std::move(logprobs)},
                {"finish_reason", c.finish_reason.empty() ? "stop" : c.finish_reason},
                {"token_ids", c.token_ids},
                {"routed_experts", nullptr}};
    if (std::string experts = c.routed_experts.NpyBase64(); !experts.empty()) {
      choice["routed_experts"] = std::move(experts);
    }
    // GenerateResponseChoice.sampling_mask (6adad087), written when the engine sent masks
    // (its --return-sampling-mask): an answer without them keeps its keys.
    if (!c.sampling_mask.empty()) choice["sampling_mask"] = c.sampling_mask.Positions();
    choice["stop_reason"] = c.stop_reason;
    list.push_back(std::move(choice));
  }
  Json doc{{"request_id", identity.id},
           {"model", identity.model},
           {"created", identity.created},
           {"choices", std::move(list)},
           {"usage", UsageJson(config, prompt, choices, /*with_nulls=*/true)},
           {"prompt_logprobs", nullptr},
           {"kv_transfer_params", nullptr}};
  if (r.return_token_ids) doc["prompt_token_ids"] = prompt.token_ids;
  if (prompt.has_prompt_logprobs) {
    Json list_lp = Json::array();
    for (const auto& position : prompt.prompt_logprobs) {
      if (!position) {
        list_lp.push_back(nullptr);
        continue;
      }
      Json map = Json::object();
      for (const Logprob& e : *position) {
        map[std::to_string(e.token_id)] = Json{
            {"logprob", ClampLogprob(e.logprob)}, {"rank", e.rank}, {"decoded_token", nullptr}};
      }
      list_lp.push_back(std::move(map));
    }
    doc["prompt_logprobs"] = std::move(list_lp);
  }
  if (!prompt.kv_transfer_params.empty()) {
    doc["kv_transfer_params"] = MsgpackValueJson(prompt.kv_transfer_params);
  }
  // Generate's `metrics` carries speculative decoding only (PR #43310): vLLM does not pass
  // --enable-per-request-metrics to the generate serving class.
  if (config.spec_decode_metrics != SpecDecodeMetricsLevel::kNone) {
    doc["metrics"] = choices.size() == 1
                         ? ChoiceMetricsJson(config, choices.front(),
                                             static_cast<int64_t>(choices.front().token_ids.size()),
                                             /*timing=*/false, /*with_nulls=*/true)
                         : Json(nullptr);
  }
  return DumpJson(doc);
}

std::string GenerateChunkEvent(const TokenRequest& r, const ResponseIdentity& identity,
                               const PromptState& prompt, const ChoiceDelta& d) {
  // Written as text (AppendJson*): the members and their order are those of vLLM's
  // GenerateResponse chunk, as GenerateResponseJson's tree has them; prompt_token_ids, on the
  // first chunk only, last.
  std::string out = "data: {\"request_id\":";
  AppendJsonString(identity.id, &out);
  out += ",\"choices\":[{\"index\":";
  AppendJsonInt(static_cast<int64_t>(d.index), &out);
  out += ",\"logprobs\":";
  if (r.response_logprobs) {
    AppendJson(TokenLogprobs(d.token_ids, d.logprobs, *r.response_logprobs), &out);
  } else {
    out += "null";
  }
  out += ",\"finish_reason\":";
  AppendJsonStringOrNull(d.finish_reason, &out);
  out += ",\"token_ids\":";
  AppendJsonInts(d.token_ids, &out);
  out += ",\"routed_experts\":";
  AppendJsonStringOrNull(d.routed_experts, &out);
  out += ",\"stop_reason\":";
  AppendJson(d.stop_reason, &out);
  out += "}],\"usage\":";
  if (d.completion_tokens) {
    const auto prompt_tokens = static_cast<int64_t>(prompt.token_ids.size());
    out += "{\"prompt_tokens\":";
    AppendJsonInt(prompt_tokens, &out);
    out += ",\"total_tokens\":";
    AppendJsonInt(prompt_tokens + *d.completion_tokens, &out);
    out += ",\"completion_tokens\":";
    AppendJsonInt(*d.completion_tokens, &out);
    out += ",\"prompt_tokens_details\":null}";
  } else {
    out += "null";
  }
  if (d.first && r.return_token_ids) {
    out += ",\"prompt_token_ids\":";
    AppendJsonInts(prompt.token_ids, &out);
  }
  out += "}\n\n";
  return out;
}

std::string GenerateUsageEvent(const ServingConfig& config, const ResponseIdentity& identity,
                               const PromptState& prompt, const std::vector<ChoiceState>& choices) {
  Json doc{{"request_id", identity.id},
           {"choices", Json::array()},
           {"usage", UsageJson(config, prompt, choices, /*with_nulls=*/false)}};
  if (config.spec_decode_metrics != SpecDecodeMetricsLevel::kNone && choices.size() == 1) {
    doc["metrics"] = ChoiceMetricsJson(config, choices.front(),
                                       static_cast<int64_t>(choices.front().token_ids.size()),
                                       /*timing=*/false, /*with_nulls=*/false);
  }
  return "data: " + DumpJson(doc) + "\n\n";
}

}  // namespace vmetrics::frontend
