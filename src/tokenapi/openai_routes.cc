// SPDX-License-Identifier: Apache-2.0
// The OpenAI-compatible and token routes; see openai_routes.h.
#include "openai_routes.h"

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "api_error.h"
#include "json_fields.h"
#include "vmetrics/internal/json_from_msgpack.h"

namespace vmetrics::frontend {
namespace {

constexpr std::string_view kJson = "application/json";

std::string RandomHex(size_t digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < digits; ++i) out += kDigits[rng() % 16];
  return out;
}

}  // namespace

HttpReply OpenAiErrorReply(unsigned status, std::string_view message) {
  return HttpReply{status, "application/json", ErrorJson(MakeError(status, std::string(message)))};
}

std::string ModelsJson(const ServingConfig& config, int64_t created) {
  auto card = [created](const std::string& id, const std::string& root, Json parent,
                        Json max_model_len) {
    Json permission{{"id", "modelperm-" + RandomHex(32)},
                    {"object", "model_permission"},
                    {"created", created},
                    {"allow_create_engine", false},
                    {"allow_sampling", true},
                    {"allow_logprobs", true},
                    {"allow_search_indices", false},
                    {"allow_view", true},
                    {"allow_fine_tuning", false},
                    {"organization", "*"},
                    {"group", nullptr},
                    {"is_blocking", false}};
    return Json{{"id", id},
                {"object", "model"},
                {"created", created},
                {"owned_by", "vllm"},
                {"root", root},
                {"parent", std::move(parent)},
                {"max_model_len", std::move(max_model_len)},
                {"permission", Json::array({std::move(permission)})}};
  };
  Json data = Json::array();
  data.push_back(
      card(config.served_model_name, config.served_model_name, nullptr, config.max_model_len));
  for (const LoraModule& m : config.lora_modules) {
    data.push_back(card(m.name, m.path, config.served_model_name, nullptr));
  }
  return DumpJson(Json{{"object", "list"}, {"data", std::move(data)}});
}

std::string VersionJson(std::string_view version, const std::vector<EngineVersion>& engines) {
  Json list = Json::array();
  for (const EngineVersion& e : engines) {
    list.push_back(Json{{"engine_index", e.engine_index},
                        {"vllm_version", e.vllm_version ? Json(*e.vllm_version) : Json(nullptr)}});
  }
  return DumpJson(Json{{"version", std::string(version)}, {"engines", std::move(list)}});
}

std::string KvEventSourcesJson(const std::vector<KvEventSource>& sources) {
  // Rank order, as the rank-keyed table vLLM's frontend fills from the ready responses.
  std::map<int64_t, const std::string*> by_rank;
  for (const KvEventSource& s : sources) {
    if (!s.kv_events_config.empty()) by_rank.emplace(s.data_parallel_rank, &s.kv_events_config);
  }
  Json out = Json::object();
  for (const auto& [rank, config] : by_rank) {
    // The handshake decoder kept the map only after reading it whole, so this converts.
    Result<Json> value = protocol::MsgpackToJson(*config);
    if (value.ok()) out[std::to_string(rank)] = std::move(*value);
  }
  return DumpJson(out);
}

namespace {

// One route: what it answers with a ready context.
using ServeRoute = void (*)(const OpenAiRouteContext& context, const HttpRequest& request,
                            const std::shared_ptr<HttpExchange>& exchange);

// RouteRow: a route declared once (method, path, whether it reads the token APIs' request
// headers, what it does); OpenAiRoutes makes the HttpRoutes from these rows, each behind the
// readiness guard.
struct RouteRow {
  const char* method;
  const char* path;
  bool token_headers;
  ServeRoute serve;
};

double SystemWallClock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// /ping is /health: 200 or 503, with an empty body as vLLM sends (vmetrics' /health adds its
// reason as text, and so does /ping).
void ServePing(const OpenAiRouteContext& c, const HttpRequest&,
               const std::shared_ptr<HttpExchange>& ex) {
  const HealthReport report = c.health ? c.health() : HealthReport{};
  ex->Reply(report.healthy ? 200 : 503, report.body.empty() ? "" : "text/plain; charset=utf-8",
            report.body);
}

// In the order OpenAiRoutes lists them (openai_routes.h).
constexpr RouteRow kRoutes[] = {
    {"POST", "/v1/completions", true,
     [](const OpenAiRouteContext& c, const HttpRequest& r,
        const std::shared_ptr<HttpExchange>& ex) { c.service->HandleCompletion(r, ex); }},
    {"POST", "/inference/v1/generate", true,
     [](const OpenAiRouteContext& c, const HttpRequest& r,
        const std::shared_ptr<HttpExchange>& ex) { c.service->HandleGenerate(r, ex); }},
    {"POST", "/abort_requests", false,
     [](const OpenAiRouteContext& c, const HttpRequest& r,
        const std::shared_ptr<HttpExchange>& ex) { c.service->HandleAbortRequests(r, ex); }},
    // vLLM's /load (serve/instrumentator/basic.py at 6adad087): the requests in flight on its
    // load-aware routes (completions and generate among them) when
    // --enable-server-load-tracking, else 0; those requests are counted from their handler's
    // start to the end of their answer.
    {"GET", "/load", false,
     [](const OpenAiRouteContext& c, const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
       const size_t load = c.server_load_tracking ? c.service->num_live_completions() : 0;
       ex->Reply(200, kJson, "{\"server_load\":" + std::to_string(load) + "}");
     }},
    {"GET", "/v1/models", false,
     [](const OpenAiRouteContext& c, const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
       const double now = c.wall_clock ? c.wall_clock() : SystemWallClock();
       ex->Reply(200, kJson, ModelsJson(c.service->config(), static_cast<int64_t>(now)));
     }},
    {"GET", "/version", false,
     [](const OpenAiRouteContext& c, const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
       ex->Reply(200, kJson,
                 VersionJson(c.version, c.engines ? c.engines() : std::vector<EngineVersion>{}));
     }},
    // vLLM's route of "[Core][Frontend] Bind KV-event publishers at port 0 and expose the bound
    // endpoints" (#55844): a table the ready responses filled, no engine round-trip.
    {"GET", "/kv_event_sources", false,
     [](const OpenAiRouteContext& c, const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
       ex->Reply(200, kJson,
                 KvEventSourcesJson(c.kv_event_sources ? c.kv_event_sources()
                                                       : std::vector<KvEventSource>{}));
     }},
    {"GET", "/ping", false, ServePing},
    {"POST", "/ping", false, ServePing},
};

}  // namespace

std::vector<HttpRoute> OpenAiRoutes(const std::function<const OpenAiRouteContext*()>& context) {
  const std::vector<std::string> token_headers = {
      std::string(kRequestIdHeader), std::string(kDataParallelRankHeader),
      std::string(kSessionIdHeader), std::string(kPriorityHeader)};
  std::vector<HttpRoute> routes;
  for (const RouteRow& row : kRoutes) {
    HttpRoute route;
    route.method = row.method;
    route.path = row.path;
    if (row.token_headers) route.request_headers = token_headers;
    route.error_reply = OpenAiErrorReply;
    route.handler = [context, serve = row.serve](const HttpRequest& request,
                                                 const std::shared_ptr<HttpExchange>& exchange) {
      const OpenAiRouteContext* ready = context ? context() : nullptr;
      if (ready == nullptr) {
        exchange->Reply(OpenAiErrorReply(503, "the engines are not ready yet"));
        return;
      }
      serve(*ready, request, exchange);
    };
    routes.push_back(std::move(route));
  }
  return routes;
}

std::vector<std::string> ApiKeyPathPrefixes() {
  return {"/v1", "/v2", "/inference", "/cohere", "/abort_requests", "/kv_event_sources"};
}

}  // namespace vmetrics::frontend
