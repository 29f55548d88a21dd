// SPDX-License-Identifier: Apache-2.0
// File: openai_routes.h
//
// The OpenAI-compatible and token routes of a vmetrics frontend, as HttpRoutes (http_route.h)
// for the HTTP server (http_server.h): the server routes and limits, these say what each path
// means and how its errors are worded (vLLM's ErrorResponse JSON, also for the 413, 500 and 503
// the server answers on a route's behalf).
//
//   POST /v1/completions          RequestService::HandleCompletion (token ids in and out)
//   POST /inference/v1/generate   RequestService::HandleGenerate (vLLM's tokens-only API)
//   POST /abort_requests          RequestService::HandleAbortRequests
//   GET  /v1/models               the served model and the LoRA modules, vLLM's ModelList
//   GET  /version                 vmetrics' version and each engine's vLLM version
//   GET  /kv_event_sources        each data-parallel rank's KV-event publisher, as its engine
//                                 reported it (vLLM's route of #55844)
//   GET|POST /ping                /health's answer (vLLM serves it for SageMaker)
//
// Thread safety: the routes' handlers are called from the server's worker threads at once;
// RequestService and the context's callbacks must be safe for that.
//
// Example:
//   OpenAiRouteContext context{.service = &request_service, .health = health};
//   HttpHandlers handlers;
//   handlers.routes = OpenAiRoutes([&context] { return &context; });
#ifndef VMETRICS_FRONTEND_OPENAI_ROUTES_H_
#define VMETRICS_FRONTEND_OPENAI_ROUTES_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "request_service.h"
#include "vmetrics/http_route.h"

namespace vmetrics::frontend {

// What one engine says it is: its index and the vLLM version its ready response carried
// (nullopt for engines that send none).
struct EngineVersion {
  int64_t engine_index = 0;
  std::optional<std::string> vllm_version;
};

// What one engine's ready response says of its KV-event publisher: its data_parallel_rank
// and its kv_events_config (EngineCoreReadyResponse::kv_events_config: the raw msgpack map,
// "" when the engine sent none or nil).
struct KvEventSource {
  int64_t data_parallel_rank = 0;
  std::string kv_events_config;
};

// What the routes answer from.
struct OpenAiRouteContext {
  RequestService* service = nullptr;                             // must outlive the server
  std::function<HealthReport()> health;                          // /ping; unset = healthy
  std::function<std::vector<EngineVersion>()> engines;           // /version; unset = none
  std::function<std::vector<KvEventSource>()> kv_event_sources;  // /kv_event_sources; unset = none
  std::function<double()> wall_clock;  // `created` of /v1/models; unset = system
  std::string version;                 // /version's own: vmetrics' (the CMake project version)
  // --enable-server-load-tracking: /load counts the token API requests in flight (else 0).
  bool server_load_tracking = false;
};

// OpenAiErrorReply
//
// An error in the OpenAI error format (ErrorJson) with the type vLLM gives `status`
// (ErrorType): the HttpRoute::error_reply of every route here.
//
// Example:
//   HttpReply r = OpenAiErrorReply(413, "request body larger than 16 bytes");
//   EXPECT_EQ(r.content_type, "application/json");
HttpReply OpenAiErrorReply(unsigned status, std::string_view message);

// The body of GET /v1/models: {"object": "list", "data": [ModelCard...]} (vLLM's
// OpenAIServingModels.show_available_models: the served name with max_model_len, then each
// LoRA module with its path as root, the served name as parent and max_model_len null).
std::string ModelsJson(const ServingConfig& config, int64_t created);

// The body of GET /version: {"version": "<version>", "engines": [{"engine_index",
// "vllm_version"}...]}. vLLM answers {"version": "<vllm>"}: here `version` is the server's own
// (vmetrics') and each engine's vLLM version is listed (null where an engine sends none).
std::string VersionJson(std::string_view version, const std::vector<EngineVersion>& engines);

// KvEventSourcesJson
//
// The body of GET /kv_event_sources: one member per data-parallel rank whose engine reported
// a publisher, keyed by the rank in decimal, in rank order, its value the engine's
// kv_events_config as JSON exactly as sent (vLLM's KVEventsConfig: enable_kv_cache_events,
// publisher, endpoint, replay_endpoint, buffer_steps, hwm, max_queue_size, topic, and any
// field a newer engine adds). Sources without a config are left out, so engines that publish
// no events give {}. When two sources claim one rank, the first listed is kept.
//
// Example:
//   EXPECT_EQ(KvEventSourcesJson({{.data_parallel_rank = 1, .kv_events_config = ""}}), "{}");
std::string KvEventSourcesJson(const std::vector<KvEventSource>& sources);

// OpenAiRoutes
//
// Every route above, in the order they are listed, each declared once (openai_routes.cc:
// method, path, the request headers it reads, what it answers). A route reads what it answers
// from through `context` when a request comes: nullptr (or an unset `context`) until the
// engines are ready, and the route answers 503 "the engines are not ready yet"; so the routes
// are registered before the request service exists. `context` is called from the server's
// worker threads; the context it returns must stay as it is while the server runs.
std::vector<HttpRoute> OpenAiRoutes(const std::function<const OpenAiRouteContext*()>& context);

// The paths --api-key guards (HttpServerOptions::api_key_path_prefixes): vLLM's
// ("/v1", "/v2", "/inference", "/cohere": GUARDED_PREFIX in vllm/entrypoints/serve/utils/
// server_utils.py at vllm-project/vllm 6adad087); /abort_requests, which vLLM serves only
// in its tokens-only and development modes and leaves unguarded there: any client could abort
// any request by id; and /kv_event_sources, which vLLM leaves unguarded too (it is outside
// GUARDED_PREFIX): it tells where every engine publishes, an address map of the deployment.
// /metrics, /health, /ping and /version stay open, as in vLLM.
std::vector<std::string> ApiKeyPathPrefixes();

}  // namespace vmetrics::frontend

#endif  // VMETRICS_FRONTEND_OPENAI_ROUTES_H_
