// SPDX-License-Identifier: Apache-2.0
// A model directory's generation config; see generation_config.h.
#include "generation_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace vmetrics::frontend {
namespace {

using nlohmann::json;

// The JSON object in `path`; nullopt when the file does not exist.
Result<std::optional<json>> ReadObject(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::optional<json>();
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("--generation-config: " + path + " is not a JSON object");
  }
  return std::optional<json>(std::move(doc));
}

// An int or a list of ints; "" on success.
std::string ReadIds(const json& v, std::vector<int64_t>* out) {
  if (v.is_number_integer()) {
    out->push_back(v.get<int64_t>());
    return "";
  }
  if (!v.is_array()) return "must be an integer or a list of integers";
  for (const json& e : v) {
    if (!e.is_number_integer()) return "must be an integer or a list of integers";
    out->push_back(e.get<int64_t>());
  }
  return "";
}

template <typename T>
Status ReadNumber(const json& doc, const char* key, const std::string& path,
                  std::optional<T>* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return Status::Ok();
  if (!it->is_number() || (std::is_integral_v<T> && !it->is_number_integer())) {
    return Status::InvalidArgument("--generation-config: " + path + ": " + key +
                                   " must be a number");
  }
  *out = it->get<T>();
  return Status::Ok();
}

}  // namespace

Result<GenerationConfig> LoadGenerationConfig(const std::string& dir) {
  GenerationConfig g;
  const std::string generation_path = dir + "/generation_config.json";
  const std::string config_path = dir + "/config.json";
  Result<std::optional<json>> generation = ReadObject(generation_path);
  if (!generation.ok()) return generation.status();
  Result<std::optional<json>> config = ReadObject(config_path);
  if (!config.ok()) return config.status();
  if (!*generation && !*config) {
    return Status::InvalidArgument("--generation-config: " + dir +
                                   " has neither generation_config.json nor config.json");
  }
  std::vector<int64_t> config_eos;
  if (*config) {
    const json& c = **config;
    if (Status s = ReadNumber(c, "vocab_size", config_path, &g.vocab_size); !s.ok()) return s;
    if (auto it = c.find("eos_token_id"); it != c.end() && !it->is_null()) {
      if (std::string e = ReadIds(*it, &config_eos); !e.empty()) {
        return Status::InvalidArgument("--generation-config: " + config_path + ": eos_token_id " +
                                       e);
      }
    }
  }
  if (*generation) {
    const json& d = **generation;
    if (auto it = d.find("eos_token_id"); it != d.end() && !it->is_null()) {
      if (std::string e = ReadIds(*it, &g.generation_eos_token_ids); !e.empty()) {
        return Status::InvalidArgument("--generation-config: " + generation_path +
                                       ": eos_token_id " + e);
      }
    }
    // vLLM's get_diff_sampling_param: these keys, when set, are the request defaults.
    for (Status s : {ReadNumber(d, "temperature", generation_path, &g.temperature),
                     ReadNumber(d, "top_p", generation_path, &g.top_p),
                     ReadNumber(d, "top_k", generation_path, &g.top_k),
                     ReadNumber(d, "min_p", generation_path, &g.min_p),
                     ReadNumber(d, "repetition_penalty", generation_path, &g.repetition_penalty),
                     ReadNumber(d, "max_new_tokens", generation_path, &g.max_tokens)}) {
      if (!s.ok()) return s;
    }
  }
  if (!config_eos.empty()) {
    g.eos_token_id = config_eos.front();
  } else if (!g.generation_eos_token_ids.empty()) {
    g.eos_token_id = g.generation_eos_token_ids.front();
  }
  return g;
}

}  // namespace vmetrics::frontend
