// SPDX-License-Identifier: Apache-2.0
// Pieces both token APIs share; see api_common.h.
#include "api_common.h"

#include <utility>

#include "vllm_request_fields.h"
#include "vmetrics/internal/json_from_msgpack.h"
#include "vmetrics/internal/python_int.h"
#include "vmetrics/internal/wire_text.h"

namespace vmetrics::frontend {

MaybeError CheckCacheSalt(const std::optional<std::string>& salt) {
  if (!salt) return std::nullopt;
  if (salt->empty()) {
    return BadRequest("Parameter 'cache_salt' must be a non-empty string if provided.",
                      "cache_salt");
  }
  if (salt->size() > 128 || salt->find_first_of(std::string("@/\\\0", 4)) != std::string::npos) {
    return BadRequest(
        "Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', "
        "'\\', or NUL.",
        "cache_salt");
  }
  return std::nullopt;
}

MaybeError CheckClientId(std::string_view value, std::string_view name) {
  const std::string n(name);
  if (value.size() > kMaxClientIdBytes) {
    return BadRequest(n + " must be at most " + std::to_string(kMaxClientIdBytes) + " bytes, got " +
                          std::to_string(value.size()) + ".",
                      n);
  }
  if (!internal::IsValidUtf8(value)) return BadRequest(n + " must be valid UTF-8.", n);
  for (const char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return BadRequest(n + " must not contain control characters.", n);
    }
  }
  return std::nullopt;
}

ParsedRequest CheckRequestIdHeader(ParsedRequest parsed, const std::string* value) {
  if (!parsed.ok() || value == nullptr || value->empty()) return parsed;
  if (MaybeError e = CheckClientId(*value, "X-Request-Id")) return Refuse(*e);
  return parsed;
}

ParsedRequest ApplyRequestHeaders(ParsedRequest parsed, const std::string* session_id,
                                  const std::string* priority) {
  if (!parsed.ok()) return parsed;
  TokenRequest& r = parsed.request;
  if (!r.session_id && session_id != nullptr && !session_id->empty()) {
    if (MaybeError e = CheckClientId(*session_id, "X-Session-ID")) return Refuse(*e);
    r.session_id = *session_id;
  }
  if (!r.session_id && r.xargs_session_id) {
    if (MaybeError e = CheckClientId(*r.xargs_session_id, "vllm_xargs")) return Refuse(*e);
    r.session_id = r.xargs_session_id;
  }
  if (priority != nullptr && r.api == TokenApi::kCompletions) {
    bool overflow = false;
    if (std::optional<int64_t> p = internal::PythonIntOfText(*priority, &overflow)) {
      r.priority = *p;
    } else if (overflow) {
      return Refuse(BadRequest("X-Vllm-Priority must fit a 64-bit integer", "X-Vllm-Priority"));
    }
  }
  return parsed;
}

ParsedRequest Refuse(ApiError error) {
  ParsedRequest p;
  p.error = std::move(error);
  return p;
}

ParsedRequest StartTokenRequest(const Json& doc, JsonFields& f, const ServingConfig& config,
                                TokenApi api) {
  if (doc.is_discarded()) return Refuse(BadRequest("request body is not valid JSON"));
  if (!doc.is_object()) return Refuse(BadRequest("request body must be a JSON object"));
  ParsedRequest parsed;
  parsed.request.api = api;
  if (MaybeError e = CheckModel(f, config, &parsed.request.lora)) return Refuse(*e);
  return parsed;
}

MaybeError CheckModel(JsonFields& f, const ServingConfig& config, std::optional<LoraModule>* lora) {
  std::optional<std::string> model;
  if (MaybeError e = f.OptStr("model", &model)) return e;
  if (!model || *model == config.served_model_name) return std::nullopt;
  for (const LoraModule& m : config.lora_modules) {
    if (m.name == *model) {
      *lora = m;
      return std::nullopt;
    }
  }
  return MakeError(404, "The model `" + *model + "` does not exist.", "model");
}

MaybeError ReadStreamOptions(JsonFields& f, TokenRequest* r, std::vector<std::string>* ignored) {
  const Json* options = nullptr;
  if (MaybeError e = f.OptObject("stream_options", &options)) return e;
  if (options == nullptr) return std::nullopt;
  JsonFields o(*options, f.Name("stream_options") + ".");
  if (MaybeError e = o.Bool("include_usage", &r->include_usage)) return e;
  if (MaybeError e = o.Bool("continuous_usage_stats", &r->continuous_usage)) return e;
  if (MaybeError e = o.SortUnread(kStreamOptionsFields, ignored)) return e;
  r->continuous_usage = r->continuous_usage && r->include_usage;
  return std::nullopt;
}

Json PerRequestMetricsJson(const std::optional<RequestTimestamps>& timestamps,
                           int64_t num_generation_tokens, bool with_nulls) {
  std::optional<double> ttft, generation, queue, itl, tps;
  if (timestamps) {
    const RequestTimestamps& t = *timestamps;
    if (t.scheduled_ts > 0 && t.first_token_ts > 0) {
      ttft = (t.first_token_ts - t.scheduled_ts) * 1000;
    }
    if (t.first_token_ts > 0 && t.last_token_ts > 0) {
      generation = (t.last_token_ts - t.first_token_ts) * 1000;
    }
    if (t.queued_ts > 0 && t.scheduled_ts > 0) queue = (t.scheduled_ts - t.queued_ts) * 1000;
    if (t.first_token_ts > 0 && t.last_token_ts > 0 && num_generation_tokens > 1) {
      itl = (t.last_token_ts - t.first_token_ts) / static_cast<double>(num_generation_tokens - 1) *
            1000;
    }
    if (t.scheduled_ts > 0 && t.last_token_ts > 0) {
      const double inference_ms = (t.last_token_ts - t.scheduled_ts) * 1000;
      if (inference_ms > 0) {
        tps = static_cast<double>(num_generation_tokens) / inference_ms * 1000;
      }
    }
  }
  Json metrics = Json::object();
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) {
      metrics[key] = *v;
    } else if (with_nulls) {
      metrics[key] = nullptr;
    }
  };
  put("time_to_first_token_ms", ttft);
  put("generation_time_ms", generation);
  put("queue_time_ms", queue);
  put("mean_itl_ms", itl);
  put("tokens_per_second", tps);
  return metrics;
}

Json SpeculativeDecodingJson(const RequestSpecDecodeMetrics& m, bool detailed) {
  const int64_t steps = m.num_spec_steps;
  const int64_t accepted = m.num_accepted_draft_tokens;
  Json j{{"mean_acceptance_length",
          steps > 0 ? 1.0 + static_cast<double>(accepted) / static_cast<double>(steps) : 1.0},
         {"draft_acceptance_rate",
          m.num_draft_tokens > 0
              ? static_cast<double>(accepted) / static_cast<double>(m.num_draft_tokens)
              : 0.0},
         {"acceptance_histogram", m.histogram},
         {"num_spec_steps", steps},
         {"num_accepted_draft_tokens", accepted},
         {"num_draft_tokens", m.num_draft_tokens},
         {"num_spec_tokens", m.num_spec_tokens}};
  if (detailed && !m.per_step_accepted.empty()) {
    j["per_step_accepted"] = m.per_step_accepted;
    j["per_step_drafted"] = m.per_step_drafted;
  }
  return j;
}

Json ChoiceMetricsJson(const ServingConfig& config, const ChoiceState& c, int64_t tokens,
                       bool timing, bool with_nulls) {
  Json metrics = timing ? PerRequestMetricsJson(c.timestamps, tokens, with_nulls) : Json::object();
  if (config.spec_decode_metrics == SpecDecodeMetricsLevel::kNone) return metrics;
  if (c.spec_decode) {
    metrics["speculative_decoding"] = SpeculativeDecodingJson(
        *c.spec_decode, config.spec_decode_metrics == SpecDecodeMetricsLevel::kDetailed);
  } else if (with_nulls) {
    metrics["speculative_decoding"] = nullptr;
  }
  return metrics;
}

Json MsgpackValueJson(std::string_view raw) {
  Result<Json> v = protocol::MsgpackToJson(raw);
  return v.ok() ? std::move(*v) : Json(nullptr);
}

}  // namespace vmetrics::frontend
