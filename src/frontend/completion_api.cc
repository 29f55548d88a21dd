// Parsing and writing the completions API; see completion_api.h.
#include "completion_api.h"

#include <nlohmann/json.hpp>

namespace vmetrics::frontend {
namespace {

using nlohmann::json;

ParsedCompletion Refuse(std::string message, unsigned status = 400,
                        std::string type = "BadRequestError") {
  ParsedCompletion p;
  p.error = ApiError{status, std::move(type), std::move(message)};
  return p;
}

constexpr std::string_view kNoTokenizer =
    "text prompts are not supported: tokenization is not part of vmetrics; send `prompt` as a "
    "list of token ids or a list of such lists";

// A token id list; "" on success, else what is wrong.
std::string ReadTokenIds(const json& list, std::vector<int64_t>* out) {
  if (list.empty()) return "prompt must not be empty";
  out->reserve(list.size());
  for (const json& t : list) {
    if (t.is_string()) return std::string(kNoTokenizer);
    if (!t.is_number_integer()) return "prompt token ids must be integers";
    if (t.is_number_unsigned() ? t.get<uint64_t>() > uint64_t{INT32_MAX}
                               : t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return "prompt token ids must be between 0 and 2147483647";
    }
    out->push_back(t.get<int64_t>());
  }
  return "";
}

// Reads an optional integer field; "" on success.
std::string ReadInt(const json& doc, const char* key, int64_t* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "";
  if (!it->is_number_integer()) return std::string(key) + " must be an integer";
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}) {
    return std::string(key) + " is too large";
  }
  *out = it->get<int64_t>();
  return "";
}

std::string ReadBool(const json& doc, const char* key, bool* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "";
  if (!it->is_boolean()) return std::string(key) + " must be a boolean";
  *out = it->get<bool>();
  return "";
}

}  // namespace

ParsedCompletion ParseCompletionRequest(std::string_view body, const CompletionLimits& limits) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Refuse("request body is not valid JSON");
  if (!doc.is_object()) return Refuse("request body must be a JSON object");

  ParsedCompletion p;
  CompletionRequest& r = p.request;
  auto model = doc.find("model");
  if (model != doc.end() && !model->is_null()) {
    if (!model->is_string()) return Refuse("model must be a string");
    const std::string& name = model->get_ref<const std::string&>();
    if (name != limits.served_model_name) {
      for (const LoraModule& m : limits.lora_modules) {
        if (m.name == name) r.lora = m;
      }
      if (!r.lora) {
        return Refuse("The model `" + name + "` does not exist.", 404, "NotFoundError");
      }
    }
  }

  auto prompt = doc.find("prompt");
  if (prompt == doc.end() || prompt->is_null()) return Refuse("prompt is required");
  if (prompt->is_string()) return Refuse(std::string(kNoTokenizer));
  if (!prompt->is_array())
    return Refuse("prompt must be a list of token ids or a list of such lists");
  if (!prompt->empty() && prompt->front().is_array()) {
    if (prompt->size() > limits.max_prompts) {
      return Refuse("at most " + std::to_string(limits.max_prompts) + " prompts per request");
    }
    for (const json& one : *prompt) {
      if (!one.is_array()) return Refuse("prompt must not mix token ids and lists of token ids");
      r.prompts.emplace_back();
      if (std::string e = ReadTokenIds(one, &r.prompts.back()); !e.empty()) return Refuse(e);
    }
  } else {
    r.prompts.emplace_back();
    if (std::string e = ReadTokenIds(*prompt, &r.prompts.back()); !e.empty()) return Refuse(e);
  }

  if (std::string e = ReadInt(doc, "max_tokens", &r.max_tokens); !e.empty()) return Refuse(e);
  if (r.max_tokens < 1) return Refuse("max_tokens must be at least 1");
  if (std::string e = ReadInt(doc, "n", &r.n); !e.empty()) return Refuse(e);
  if (r.n < 1 || r.n > limits.max_n) {
    return Refuse("n must be between 1 and " + std::to_string(limits.max_n));
  }
  auto temperature = doc.find("temperature");
  if (temperature != doc.end() && !temperature->is_null()) {
    if (!temperature->is_number()) return Refuse("temperature must be a number");
    r.temperature = temperature->get<double>();
    if (!(r.temperature >= 0)) return Refuse("temperature must be non-negative");
  }
  auto seed = doc.find("seed");
  if (seed != doc.end() && !seed->is_null()) {
    int64_t v = 0;
    if (std::string e = ReadInt(doc, "seed", &v); !e.empty()) return Refuse(e);
    r.seed = v;
  }
  if (std::string e = ReadBool(doc, "stream", &r.stream); !e.empty()) return Refuse(e);
  if (std::string e = ReadBool(doc, "ignore_eos", &r.ignore_eos); !e.empty()) return Refuse(e);
  auto options = doc.find("stream_options");
  if (options != doc.end() && !options->is_null()) {
    if (!options->is_object()) return Refuse("stream_options must be an object");
    if (std::string e = ReadBool(*options, "include_usage", &r.include_usage); !e.empty()) {
      return Refuse("stream_options." + e);
    }
  }

  for (const std::vector<int64_t>& tokens : r.prompts) {
    const auto prompt_len = static_cast<int64_t>(tokens.size());
    // vLLM's wording (serving_engine.py _validate_input), so clients that match it still do.
    if (r.max_tokens > limits.max_model_len || prompt_len + r.max_tokens > limits.max_model_len) {
      return Refuse("This model's maximum context length is " +
                    std::to_string(limits.max_model_len) + " tokens. However, you requested " +
                    std::to_string(prompt_len + r.max_tokens) + " tokens (" +
                    std::to_string(prompt_len) + " in the messages, " +
                    std::to_string(r.max_tokens) +
                    " in the completion). Please reduce the length of the messages or "
                    "completion.");
    }
  }
  return p;
}

std::string ErrorJson(const ApiError& error) {
  const json doc = {{"error",
                     {{"message", error.message},
                      {"type", error.type},
                      {"param", nullptr},
                      {"code", error.status}}}};
  return doc.dump();
}

std::string ErrorType(unsigned status) {
  if (status == 503) return "ServiceUnavailableError";
  if (status >= 500) return "InternalServerError";
  return "BadRequestError";
}

namespace {

json Envelope(const CompletionIdentity& identity) {
  return {{"id", identity.id},
          {"object", "text_completion"},
          {"created", identity.created},
          {"model", identity.model}};
}

json Usage(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

std::string Event(const json& doc) { return "data: " + doc.dump() + "\n\n"; }

}  // namespace

std::string CompletionResponseJson(const CompletionIdentity& identity,
                                   const std::vector<CompletionChoice>& choices,
                                   int64_t prompt_tokens) {
  json doc = Envelope(identity);
  json list = json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    completion_tokens += static_cast<int64_t>(choices[i].token_ids.size());
    list.push_back({{"index", i},
                    {"text", ""},
                    {"token_ids", choices[i].token_ids},
                    {"logprobs", nullptr},
                    {"finish_reason", choices[i].finish_reason},
                    {"stop_reason", nullptr}});
  }
  doc["choices"] = std::move(list);
  doc["usage"] = Usage(prompt_tokens, completion_tokens);
  return doc.dump();
}

std::string CompletionChunkEvent(const CompletionIdentity& identity, size_t index,
                                 const std::vector<int64_t>& token_ids,
                                 const std::optional<std::string>& finish_reason) {
  json doc = Envelope(identity);
  json choice = {{"index", index},           {"text", ""},
                 {"token_ids", token_ids},   {"logprobs", nullptr},
                 {"finish_reason", nullptr}, {"stop_reason", nullptr}};
  if (finish_reason) choice["finish_reason"] = *finish_reason;
  doc["choices"] = json::array({std::move(choice)});
  return Event(doc);
}

std::string UsageChunkEvent(const CompletionIdentity& identity, int64_t prompt_tokens,
                            int64_t completion_tokens) {
  json doc = Envelope(identity);
  doc["choices"] = json::array();
  doc["usage"] = Usage(prompt_tokens, completion_tokens);
  return Event(doc);
}

std::string ErrorEvent(const ApiError& error) { return "data: " + ErrorJson(error) + "\n\n"; }

}  // namespace vmetrics::frontend
