// SPDX-License-Identifier: Apache-2.0
// POST /v1/completions: parsing and answers; see completion_api.h.
#include "completion_api.h"

#include <algorithm>
#include <utility>

#include "api_common.h"
#include "json_fields.h"
#include "msgpack_from_json.h"
#include "sampling_fields.h"
#include "sampling_rules.h"
#include "vllm_request_fields.h"

namespace vmetrics::frontend {
namespace {

constexpr const char* kNoTokenizer =
    "text prompts are not supported: tokenization is not part of vmetrics; send `prompt` as a "
    "list of token ids or a list of such lists";

// A token id list; "" on success, else what is wrong.
std::string ReadTokenIds(const Json& list, std::vector<int64_t>* out) {
  if (list.empty()) return "prompt must not be empty";
  out->reserve(list.size());
  for (const Json& t : list) {
    if (t.is_string()) return kNoTokenizer;
    if (!t.is_number_integer()) return "prompt token ids must be integers";
    std::optional<int64_t> id = JsonInt(t);
    if (!id || *id < 0 || *id > INT32_MAX) {
      return "prompt token ids must be between 0 and 2147483647";
    }
    out->push_back(*id);
  }
  return "";
}

}  // namespace

ParsedRequest ParseCompletionRequest(std::string_view body, const ServingConfig& config) {
  const Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  JsonFields f(doc, "");
  ParsedRequest parsed = StartTokenRequest(doc, f, config, TokenApi::kCompletions);
  if (!parsed.ok()) return parsed;
  TokenRequest& r = parsed.request;

  // prompt: token ids, or a list of such lists.
  const Json* prompt = f.Get("prompt");
  if (f.Has("prompt_embeds")) {
    return Refuse(f.Refuse("prompt_embeds",
                           "prompt_embeds are not supported: vmetrics sends token ids only"));
  }
  if (prompt == nullptr || prompt->is_null()) {
    return Refuse(f.Refuse("prompt",
                           "Either prompt or prompt_embeds must be provided and "
                           "non-empty."));
  }
  if (prompt->is_string()) return Refuse(f.Refuse("prompt", kNoTokenizer));
  if (!prompt->is_array()) {
    return Refuse(f.Refuse("prompt", "prompt must be a list of token ids or a list of such lists"));
  }
  if (!prompt->empty() && prompt->front().is_array()) {
    if (prompt->size() > config.max_prompts) {
      return Refuse(f.Refuse("prompt", "prompt list length " + std::to_string(prompt->size()) +
                                           " exceeds the maximum allowed count of " +
                                           std::to_string(config.max_prompts) + "."));
    }
    for (const Json& one : *prompt) {
      if (!one.is_array()) {
        return Refuse(f.Refuse("prompt", "prompt must not mix token ids and lists of token ids"));
      }
      r.prompts.emplace_back();
      if (std::string e = ReadTokenIds(one, &r.prompts.back()); !e.empty()) {
        return Refuse(f.Refuse("prompt", e));
      }
    }
  } else {
    r.prompts.emplace_back();
    if (std::string e = ReadTokenIds(*prompt, &r.prompts.back()); !e.empty()) {
      return Refuse(f.Refuse("prompt", e));
    }
  }

  // The sampling fields, over the defaults: request, else the generation config's, else
  // vLLM's (CompletionRequest._DEFAULT_SAMPLING_PARAMS).
  SamplingParams& p = r.sampling;
  const GenerationConfig& g = config.generation;
  p.temperature = g.temperature.value_or(1.0);
  p.top_p = g.top_p.value_or(1.0);
  p.top_k = g.top_k.value_or(0);
  p.min_p = g.min_p.value_or(0.0);
  p.repetition_penalty = g.repetition_penalty.value_or(1.0);
  if (MaybeError e =
          ReadSamplingFields(f, SamplingFieldSet::kCompletions, &p, &parsed.ignored_fields)) {
    return Refuse(*e);
  }

  // logprobs: a number (vLLM checks the type before anything else).
  if (const Json* lp = f.Get("logprobs"); lp != nullptr && !lp->is_null()) {
    if (!lp->is_number_integer()) {
      return Refuse(f.Refuse("logprobs", "`logprobs` must be an integer."));
    }
  }
  std::optional<int64_t> logprobs;
  if (MaybeError e = f.OptInt("logprobs", &logprobs)) return Refuse(*e);
  if (const Json* lp = f.Get("prompt_logprobs"); lp != nullptr && !lp->is_null()) {
    if (!lp->is_number_integer()) {
      return Refuse(f.Refuse("prompt_logprobs", "`prompt_logprobs` must be an integer."));
    }
  }
  int64_t max_tokens = 16;  // null and absent: CompletionRequest's default
  if (MaybeError e = f.Int("max_tokens", &max_tokens)) return Refuse(*e);
  if (MaybeError e = f.Bool("echo", &r.echo)) return Refuse(*e);
  if (MaybeError e = f.Bool("stream", &r.stream)) return Refuse(*e);
  if (MaybeError e = ReadStreamOptions(f, &r, &parsed.ignored_fields)) return Refuse(*e);
  if (f.Has("stream_options") && !r.stream) {
    return Refuse(
        f.Refuse("stream_options", "Stream options can only be defined when `stream=True`."));
  }
  // --enable-force-include-usage: should_include_usage answers (True, True) whatever
  // stream_options says (vllm/entrypoints/serve/utils/api_utils.py at 6adad087).
  if (config.enable_force_include_usage) {
    r.include_usage = true;
    r.continuous_usage = true;
  }
  if (f.Has("suffix")) return Refuse(f.Refuse("suffix", "suffix is not currently supported"));
  std::string user;
  if (MaybeError e = f.Str("user", &user)) return Refuse(*e);  // OpenAI's end-user tag
  bool beam = false;
  if (MaybeError e = f.Bool("use_beam_search", &beam)) return Refuse(*e);
  if (beam) {
    return Refuse(f.Refuse("use_beam_search",
                           "beam search is not supported: vLLM runs it in the frontend, scoring "
                           "beams on text, and vmetrics has no tokenizer"));
  }
  double length_penalty = 1.0;
  if (MaybeError e = f.Double("length_penalty", &length_penalty)) return Refuse(*e);
  if (length_penalty != 1.0) {
    return Refuse(f.Refuse("length_penalty",
                           "length_penalty applies to beam search only, which vmetrics does not "
                           "run"));
  }
  std::optional<bool> watermarking;
  if (MaybeError e = f.OptBool("watermarking", &watermarking)) return Refuse(*e);
  if (watermarking.value_or(false)) {
    return Refuse(f.Refuse("watermarking",
                           "watermarking is not supported: it is not a SamplingParams field of "
                           "the engines vmetrics speaks to"));
  }
  std::optional<int64_t> truncate;
  if (MaybeError e = f.OptInt("truncate_prompt_tokens", &truncate)) return Refuse(*e);
  if (truncate && *truncate < -1) {
    return Refuse(f.Refuse("truncate_prompt_tokens", "truncate_prompt_tokens must be at least -1"));
  }
  std::optional<std::string> side;
  if (MaybeError e = f.OptStr("truncation_side", &side)) return Refuse(*e);
  if (side && *side != "left" && *side != "right") {
    return Refuse(f.Refuse("truncation_side", "truncation_side must be 'left' or 'right'"));
  }
  bool add_special_tokens = true;  // token prompts are used as they are, as in vLLM
  if (MaybeError e = f.Bool("add_special_tokens", &add_special_tokens)) return Refuse(*e);
  if (const Json* rf = f.Get("response_format"); rf != nullptr && !rf->is_null()) {
    const bool text =
        rf->is_object() && rf->size() == 1 && rf->contains("type") && (*rf)["type"] == "text";
    if (!text) {
      return Refuse(f.Refuse("response_format",
                             "response_format other than {\"type\": \"text\"} is not supported: "
                             "structured outputs need a tokenizer"));
    }
  }
  if (MaybeError e = f.Int("priority", &r.priority)) return Refuse(*e);
  if (MaybeError e = f.Str("request_id", &r.request_id)) return Refuse(*e);
  if (MaybeError e = CheckClientId(r.request_id, "request_id")) return Refuse(*e);
  if (MaybeError e = f.OptStr("session_id", &r.session_id)) return Refuse(*e);
  if (r.session_id) {
    if (MaybeError e = CheckClientId(*r.session_id, "session_id")) return Refuse(*e);
  }
  std::optional<bool> as_token_ids;
  if (MaybeError e = f.OptBool("return_tokens_as_token_ids", &as_token_ids)) return Refuse(*e);
  std::optional<bool> return_token_ids;
  if (MaybeError e = f.OptBool("return_token_ids", &return_token_ids)) return Refuse(*e);
  r.return_token_ids = return_token_ids.value_or(false);
  bool offsets = false;
  if (MaybeError e = f.Bool("return_token_offsets", &offsets)) return Refuse(*e);
  if (offsets) {
    return Refuse(f.Refuse("return_token_offsets",
                           "return_token_offsets needs a tokenizer; vLLM serves it on the render "
                           "endpoints only"));
  }
  bool mm_kwargs = true;  // only the render endpoints return multimodal kwargs
  if (MaybeError e = f.Bool("return_mm_kwargs", &mm_kwargs)) return Refuse(*e);
  if (MaybeError e = f.OptStr("cache_salt", &r.cache_salt)) return Refuse(*e);
  if (MaybeError e = CheckCacheSalt(r.cache_salt)) return Refuse(*e);
  const Json* kv = nullptr;
  const Json* ec = nullptr;
  const Json* xargs = nullptr;
  if (MaybeError e = f.OptObject("kv_transfer_params", &kv)) return Refuse(*e);
  if (MaybeError e = f.OptObject("ec_transfer_params", &ec)) return Refuse(*e);
  if (MaybeError e = f.OptObject("vllm_xargs", &xargs)) return Refuse(*e);
  if (xargs != nullptr) {
    if (const auto sid = xargs->find("session_id");
        sid != xargs->end() && sid->is_string() && !sid->get<std::string>().empty()) {
      r.xargs_session_id = sid->get<std::string>();
    }
    for (auto it = xargs->begin(); it != xargs->end(); ++it) {
      const Json& v = it.value();
      auto scalar = [](const Json& x) { return x.is_string() || x.is_number(); };
      bool ok = scalar(v);
      if (v.is_array()) ok = std::all_of(v.begin(), v.end(), scalar);
      if (!ok) {
        return Refuse(
            f.Refuse("vllm_xargs", "vllm_xargs values must be strings, numbers or lists of them"));
      }
    }
  }
  if (MaybeError e = f.SortUnread(kCompletionRequestFields, &parsed.ignored_fields)) {
    return Refuse(*e);
  }

  // CompletionRequest's validators.
  if (p.logprob_token_ids) {
    if (r.echo && max_tokens == 0) {
      return Refuse(f.Refuse("logprob_token_ids",
                             "`logprob_token_ids` is not supported when `echo=True` and "
                             "`max_tokens=0` because no output tokens are generated."));
    }
    if (!logprobs) {
      return Refuse(
          f.Refuse("logprob_token_ids", "when using `logprob_token_ids`, `logprobs` must be set."));
    }
  }
  if (p.prompt_logprobs) {
    if (r.stream && (*p.prompt_logprobs > 0 || *p.prompt_logprobs == -1)) {
      return Refuse(
          f.Refuse("prompt_logprobs", "`prompt_logprobs` are not available when `stream=True`."));
    }
    if (*p.prompt_logprobs < 0 && *p.prompt_logprobs != -1) {
      return Refuse(
          f.Refuse("prompt_logprobs", "`prompt_logprobs` must be a positive value or -1."));
    }
  }
  // CompletionRequest.check_logprobs at 6adad087: no -1 (all of the vocabulary) for logprobs,
  // unlike prompt_logprobs.
  if (logprobs && *logprobs < 0) {
    return Refuse(f.Refuse("logprobs", "`logprobs` must be a positive value."));
  }
  if (logprobs && as_token_ids == false) {
    return Refuse(f.Refuse("return_tokens_as_token_ids",
                           "Unable to get tokenizer because `skip_tokenizer_init=True`: vmetrics "
                           "writes logprob tokens as \"token_id:<id>\" only"));
  }

  // The context, as vLLM's TokenizeParams checks it (vllm/renderers/params.py at 6adad087,
  // with CompletionRequest.build_tok_params' names): max_tokens against max_model_len, then
  // truncate_prompt_tokens against the room left for the prompt, then each prompt (truncated as
  // asked: left keeps the last tokens, vLLM's default) against that room.
  if (max_tokens < 0) {
    return Refuse(f.Refuse(
        "max_tokens", "max_tokens must be at least 1, got " + std::to_string(max_tokens) + "."));
  }
  const int64_t room = config.max_model_len - max_tokens;  // max_input_tokens
  if (max_tokens > config.max_model_len) {
    return Refuse(
        f.Refuse("max_tokens", "max_tokens=" + std::to_string(max_tokens) +
                                   " cannot be greater than max_model_len=max_total_tokens=" +
                                   std::to_string(config.max_model_len) +
                                   ". Please request fewer output tokens."));
  }
  if (truncate && *truncate > room) {
    return Refuse(f.Refuse(
        "truncate_prompt_tokens",
        "truncate_prompt_tokens=" + std::to_string(*truncate) +
            " cannot be greater than max_model_len - max_tokens = " + std::to_string(room) +
            ". Please request a smaller truncation size."));
  }
  for (std::vector<int64_t>& tokens : r.prompts) {
    if (truncate) {
      const int64_t keep = *truncate == -1 ? room : *truncate;
      if (static_cast<int64_t>(tokens.size()) > keep) {
        if (side.value_or("left") == "left") {
          tokens.erase(tokens.begin(), tokens.end() - keep);
        } else {
          tokens.resize(static_cast<size_t>(keep));
        }
      }
      if (tokens.empty()) return Refuse(f.Refuse("prompt", "prompt must not be empty"));
    }
    if (MaybeError e = CheckPromptTokens(config, tokens, "prompt")) return Refuse(*e);
    const int64_t count = static_cast<int64_t>(tokens.size());
    if (count > room) {
      // vLLM says "at least" when the count is one past the room: a tokenizer cuts text there.
      const std::string qualifier = count == room + 1 ? "at least " : "";
      std::string message = "This model's maximum context length is ";
      message.append(std::to_string(config.max_model_len))
          .append(" tokens. However, you requested ")
          .append(std::to_string(max_tokens))
          .append(" output tokens and your prompt contains ")
          .append(qualifier)
          .append(std::to_string(count))
          .append(" input tokens, for a total of ")
          .append(qualifier)
          .append(std::to_string(count + max_tokens))
          .append(
              " tokens. Please reduce the length of the input prompt or the number of requested "
              "output tokens.");
      return Refuse(f.Refuse("input_tokens", message));
    }
  }
  r.echo_without_generation = r.echo && max_tokens == 0;
  const int64_t engine_max_tokens = r.echo_without_generation ? 1 : max_tokens;
  if (engine_max_tokens < 1) {
    return Refuse(f.Refuse(
        "max_tokens", "max_tokens must be at least 1, got " + std::to_string(max_tokens) + "."));
  }
  for (const std::vector<int64_t>& tokens : r.prompts) {
    // An echo without generation still asks the engine for one token, which must fit: the
    // engine's InputProcessor refuses a prompt as long as the context (vllm/v1/engine/
    // input_processor.py at 6adad087, its message; no param).
    if (static_cast<int64_t>(tokens.size()) + engine_max_tokens > config.max_model_len) {
      return Refuse(BadRequest(
          "The decoder prompt (length " + std::to_string(tokens.size()) +
              ") plus the number of requested output tokens (at least 1) is longer than the "
              "maximum model length of " +
              std::to_string(config.max_model_len) +
              ". Make sure that `max_model_len` is no smaller than the number of text tokens "
              "(prompt + requested output tokens).",
          ""));
    }
  }

  // CompletionRequest.to_sampling_params.
  p.max_tokens = engine_max_tokens;
  p.logprobs = p.logprob_token_ids ? std::nullopt : logprobs;
  if (!p.prompt_logprobs && r.echo) p.prompt_logprobs = logprobs;
  p.output_kind = r.stream ? 1 : 2;  // DELTA, FINAL_ONLY
  p.skip_clone = true;
  p.request_model_floats = true;  // CompletionRequest's floats: on the wire whatever their value
  std::vector<std::pair<std::string, const Json*>> extra;
  if (xargs != nullptr) {
    for (auto it = xargs->begin(); it != xargs->end(); ++it) extra.emplace_back(it.key(), &*it);
  }
  auto put = [&extra](const char* key, const Json* value) {
    if (value == nullptr || value->empty()) return;  // `if self.kv_transfer_params:`
    for (auto& [k, v] : extra) {
      if (k == key) {
        v = value;
        return;
      }
    }
    extra.emplace_back(key, value);
  };
  put("kv_transfer_params", kv);
  put("ec_transfer_params", ec);
  if (!extra.empty()) p.extra_args = MsgpackMapFromJson(extra);
  if (MaybeError e = FinishSamplingParams(config, &p)) return Refuse(*e);
  // Each prompt's n choices are n engine requests: one small body must not become an engine
  // queue's worth of work (vLLM has no such bound; docs/reliability.md, "Memory and fairness").
  if (const int64_t engine_requests = static_cast<int64_t>(r.prompts.size()) * p.n;
      engine_requests > config.max_engine_requests) {
    return Refuse(f.Refuse("n", "this request makes " + std::to_string(engine_requests) +
                                    " engine requests (prompts x n); at most " +
                                    std::to_string(config.max_engine_requests) +
                                    " are accepted in one request."));
  }
  r.response_logprobs = logprobs;
  return parsed;
}

namespace {

std::string TokenString(int64_t id) { return "token_id:" + std::to_string(id); }

// vLLM's _create_completion_logprobs with return_as_token_id: per position the token, its
// logprob (null where the position has none: the first prompt position), and a map of the
// first `num + 1` entries.
Json CompletionLogprobs(const std::vector<int64_t>& token_ids,
                        const std::vector<std::optional<PositionLogprobs>>& positions,
                        int64_t num) {
  Json text_offset = Json::array(), token_logprobs = Json::array(), tokens = Json::array(),
       top_logprobs = Json::array();
  int64_t offset = 0;
  size_t last_len = 0;
  for (size_t i = 0; i < token_ids.size(); ++i) {
    const std::string token = TokenString(token_ids[i]);
    const Logprob* own = nullptr;
    if (i < positions.size() && positions[i]) own = FindLogprob(*positions[i], token_ids[i]);
    tokens.push_back(token);
    if (own == nullptr) {
      token_logprobs.push_back(nullptr);
      top_logprobs.push_back(nullptr);
    } else {
      token_logprobs.push_back(ClampLogprob(own->logprob));
      Json top = Json::object();
      int64_t k = 0;
      for (const Logprob& e : *positions[i]) {
        if (num >= k) top[TokenString(e.token_id)] = ClampLogprob(e.logprob);
        ++k;
      }
      top_logprobs.push_back(std::move(top));
    }
    offset = i == 0 ? 0 : offset + static_cast<int64_t>(last_len);
    text_offset.push_back(offset);
    last_len = token.size();
  }
  return Json{{"text_offset", std::move(text_offset)},
              {"token_logprobs", std::move(token_logprobs)},
              {"tokens", std::move(tokens)},
              {"top_logprobs", std::move(top_logprobs)}};
}

// prompt_logprobs on a choice: [null, {"<id>": {"logprob", "rank", "decoded_token": null}}].
Json PromptLogprobsJson(const PromptState& prompt) {
  if (!prompt.has_prompt_logprobs) return nullptr;
  Json list = Json::array();
  for (const auto& position : prompt.prompt_logprobs) {
    if (!position) {
      list.push_back(nullptr);
      continue;
    }
    Json map = Json::object();
    for (const Logprob& e : *position) {
      map[std::to_string(e.token_id)] =
          Json{{"logprob", ClampLogprob(e.logprob)}, {"rank", e.rank}, {"decoded_token", nullptr}};
    }
    list.push_back(std::move(map));
  }
  return list;
}

Json Usage(int64_t prompt_tokens, int64_t completion_tokens) {
  return Json{{"prompt_tokens", prompt_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"completion_tokens", completion_tokens},
              {"prompt_tokens_details", nullptr}};
}

Json Envelope(const ResponseIdentity& identity) {
  return Json{{"id", identity.id},
              {"object", "text_completion"},
              {"created", identity.created},
              {"model", identity.model}};
}

// The tokens and logprobs a choice's logprobs describe: with echo the prompt's first.
void EchoedPositions(const TokenRequest& r, const PromptState& prompt,
                     const std::vector<int64_t>& tokens,
                     const std::vector<std::optional<PositionLogprobs>>& logprobs,
                     std::vector<int64_t>* ids,
                     std::vector<std::optional<PositionLogprobs>>* positions) {
  ids->assign(prompt.token_ids.begin(), prompt.token_ids.end());
  positions->assign(prompt.prompt_logprobs.begin(), prompt.prompt_logprobs.end());
  positions->resize(ids->size());
  if (r.echo_without_generation) return;
  ids->insert(ids->end(), tokens.begin(), tokens.end());
  positions->insert(positions->end(), logprobs.begin(), logprobs.end());
  positions->resize(ids->size());
}

// Whether answers carry `metrics`: the timings or speculative decoding asked for.
bool WithMetrics(const ServingConfig& config) {
  return config.enable_per_request_metrics ||
         config.spec_decode_metrics != SpecDecodeMetricsLevel::kNone;
}

// The `metrics` of a whole answer: null unless it is one prompt's one choice, as vLLM
// suppresses metrics that cannot be attributed to one generation stream.
Json MetricsOf(const ServingConfig& config, const std::vector<ChoiceState>& choices,
               int64_t completion_tokens) {
  if (choices.size() != 1) return nullptr;
  return ChoiceMetricsJson(config, choices.front(), completion_tokens,
                           config.enable_per_request_metrics, /*with_nulls=*/true);
}

}  // namespace

std::string CompletionResponseJson(const ServingConfig& config, const TokenRequest& r,
                                   const ResponseIdentity& identity,
                                   const std::vector<PromptState>& prompts,
                                   const std::vector<ChoiceState>& choices) {
  Json doc = Envelope(identity);
  Json list = Json::array();
  int64_t completion_tokens = 0;
  const size_t n = static_cast<size_t>(r.sampling.n);
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceState& c = choices[i];
    const PromptState& prompt = prompts[i / n];
    completion_tokens += static_cast<int64_t>(c.token_ids.size());
    Json logprobs = nullptr;
    if (r.response_logprobs) {
      if (r.echo) {
        std::vector<int64_t> ids;
        std::vector<std::optional<PositionLogprobs>> positions;
        EchoedPositions(r, prompt, c.token_ids, c.logprobs, &ids, &positions);
        logprobs = CompletionLogprobs(ids, positions, *r.response_logprobs);
      } else {
        logprobs = CompletionLogprobs(c.token_ids, c.logprobs, *r.response_logprobs);
      }
    }
    Json choice{{"index", i},
                {"text", ""},
                {"logprobs", std::move(logprobs)},
                {"finish_reason", c.finish_reason},
                {"stop_reason", c.stop_reason},
                {"token_ids", c.token_ids},
                {"prompt_logprobs", PromptLogprobsJson(prompt)},
                {"prompt_token_ids", nullptr}};
    if (r.echo || r.return_token_ids) choice["prompt_token_ids"] = prompt.token_ids;
    // CompletionResponseChoice.routed_experts (6adad087), written when the engine sent the
    // routing (its --enable-return-routed-experts): an answer without it keeps its keys.
    if (std::string experts = c.routed_experts.NpyBase64(); !experts.empty()) {
      choice["routed_experts"] = std::move(experts);
    }
    list.push_back(std::move(choice));
  }
  int64_t prompt_tokens = 0;
  for (const PromptState& p : prompts) prompt_tokens += static_cast<int64_t>(p.token_ids.size());
  doc["choices"] = std::move(list);
  doc["service_tier"] = nullptr;
  doc["system_fingerprint"] = nullptr;
  Json usage = Usage(prompt_tokens, completion_tokens);
  // vLLM reports the last prompt's cached tokens, when there are any.
  if (config.enable_prompt_tokens_details && !prompts.empty() &&
      prompts.back().cached_tokens.value_or(0) != 0) {
    usage["prompt_tokens_details"] = Json{{"cached_tokens", *prompts.back().cached_tokens}};
  }
  doc["usage"] = std::move(usage);
  doc["kv_transfer_params"] = nullptr;
  if (!prompts.empty() && !prompts.front().kv_transfer_params.empty()) {
    doc["kv_transfer_params"] = MsgpackValueJson(prompts.front().kv_transfer_params);
  }
  if (WithMetrics(config)) doc["metrics"] = MetricsOf(config, choices, completion_tokens);
  return DumpJson(doc);
}

std::string CompletionChunkEvent(const TokenRequest& r, const ResponseIdentity& identity,
                                 const std::vector<PromptState>& prompts, const ChoiceDelta& d) {
  const PromptState& prompt = prompts[d.prompt];
  // Written as text (AppendJson*): the members and their order are those of the tree
  // CompletionResponseJson's envelope and choices have, as vLLM's CompletionStreamResponse
  // serialises them.
  std::string out = "data: {\"id\":";
  AppendJsonString(identity.id, &out);
  out += ",\"object\":\"text_completion\",\"created\":";
  AppendJsonInt(identity.created, &out);
  out += ",\"model\":";
  AppendJsonString(identity.model, &out);
  out += ",\"choices\":[{\"index\":";
  AppendJsonInt(static_cast<int64_t>(d.index), &out);
  out += ",\"text\":\"\",\"logprobs\":";
  if (!r.response_logprobs) {
    out += "null";
  } else if (r.echo && d.first) {
    std::vector<int64_t> ids;
    std::vector<std::optional<PositionLogprobs>> positions;
    EchoedPositions(r, prompt, d.token_ids, d.logprobs, &ids, &positions);
    AppendJson(CompletionLogprobs(ids, positions, *r.response_logprobs), &out);
  } else {
    AppendJson(CompletionLogprobs(d.token_ids, d.logprobs, *r.response_logprobs), &out);
  }
  out += ",\"finish_reason\":";
  AppendJsonStringOrNull(d.finish_reason, &out);
  out += ",\"stop_reason\":";
  AppendJson(d.stop_reason, &out);
  out += ",\"prompt_token_ids\":";
  if (d.first && (r.echo || r.return_token_ids)) {
    AppendJsonInts(prompt.token_ids, &out);
  } else {
    out += "null";
  }
  out += ",\"token_ids\":";
  AppendJsonInts(d.token_ids, &out);
  out += "}],\"usage\":";
  if (d.completion_tokens) {
    AppendJson(Usage(static_cast<int64_t>(prompt.token_ids.size()), *d.completion_tokens), &out);
  } else {
    out += "null";
  }
  out += ",\"system_fingerprint\":null}\n\n";
  return out;
}

std::string CompletionUsageEvent(const ServingConfig& config, const ResponseIdentity& identity,
                                 const std::vector<PromptState>& prompts,
                                 const std::vector<ChoiceState>& choices) {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (const PromptState& p : prompts) prompt_tokens += static_cast<int64_t>(p.token_ids.size());
  for (const ChoiceState& c : choices) {
    completion_tokens += static_cast<int64_t>(c.token_ids.size());
  }
  Json doc = Envelope(identity);
  doc["choices"] = Json::array();
  // Serialised with exclude_none: no null keys.
  Json usage{{"prompt_tokens", prompt_tokens},
             {"total_tokens", prompt_tokens + completion_tokens},
             {"completion_tokens", completion_tokens}};
  // The stream takes the cached tokens of the first output it saw.
  if (config.enable_prompt_tokens_details && !prompts.empty() &&
      prompts.front().cached_tokens.value_or(0) != 0) {
    usage["prompt_tokens_details"] = Json{{"cached_tokens", *prompts.front().cached_tokens}};
  }
  doc["usage"] = std::move(usage);
  if (WithMetrics(config) && choices.size() == 1) {
    doc["metrics"] = ChoiceMetricsJson(config, choices.front(), completion_tokens,
                                       config.enable_per_request_metrics, /*with_nulls=*/false);
  }
  return "data: " + DumpJson(doc) + "\n\n";
}

}  // namespace vmetrics::frontend
