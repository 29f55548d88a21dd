// SPDX-License-Identifier: Apache-2.0
// Frontend as an embedder uses it: FrontendOptions filled in code (no flag parser), Bind and
// Start returning Status values, the HTTP endpoint with the OpenAI route and an embedder's own
// route, against in-process stand-in engines over real ZeroMQ. Also the option checks Bind
// makes before any engine is waited for, and the OpenAI error wording of the routes.
#include "vmetrics/frontend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "completion_api.h"
#include "loadgen/http_client.h"
#include "openai_routes.h"
#include "vmetrics/simulator.h"

namespace vmetrics {
namespace {

using loadgen::HttpClientResponse;
using loadgen::HttpGet;
using loadgen::HttpPost;
using nlohmann::json;

// A route of the embedder's own, beside the frontend's.
HttpRoute VersionRoute() {
  HttpRoute route;
  route.method = "GET";
  route.path = "/embedder/version";
  route.handler = [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->Reply(200, "application/json", R"({"version":"embedded-1"})");
  };
  return route;
}

TEST(FrontendFromOptions, ServesMetricsHealthCompletionsAndExtraRoutes) {
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  options.engine_ready_timeout_s = 30;
  options.served_model_name = "embedded";
  options.kv_transfer_config = R"({"kv_connector":"NixlConnector"})";
  options.cache_config_info = R"({"enable_prefix_caching": true})";
  options.extra_routes.push_back(VersionRoute());
  Frontend frontend(options);
  Status s = frontend.Bind();
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Served from Bind on, while the engine loads: the engine families, no vllm:* family yet,
  // /health 503 "starting", the API 503.
  ASSERT_NE(frontend.http_port(), 0) << "served from Bind on";
  {
    const std::string early = "http://127.0.0.1:" + std::to_string(frontend.http_port());
    HttpClientResponse metrics = HttpGet(early + "/metrics");
    ASSERT_EQ(metrics.status, 200) << metrics.error;
    EXPECT_NE(metrics.body.find("vmetrics_engine_up{engine=\"0\"} 0.0\n"), std::string::npos)
        << metrics.body;
    EXPECT_NE(metrics.body.find("vmetrics_engine_state{engine=\"0\",state=\"starting\"} 1.0\n"
                                "vmetrics_engine_state{engine=\"0\",state=\"ready\"} 0.0\n"
                                "vmetrics_engine_state{engine=\"0\",state=\"dead\"} 0.0\n"),
              std::string::npos)
        << metrics.body;
    EXPECT_EQ(metrics.body.find("vllm:"), std::string::npos) << metrics.body;
    // prometheus_client's process families first, as vLLM's frontend shows them; the build.
    EXPECT_EQ(metrics.body.rfind("# HELP process_virtual_memory_bytes Virtual memory size in "
                                 "bytes.\n",
                                 0),
              0u)
        << metrics.body;
    EXPECT_NE(metrics.body.find("\nprocess_open_fds "), std::string::npos) << metrics.body;
    EXPECT_NE(metrics.body.find("\nvmetrics_build_info{revision=\""), std::string::npos)
        << metrics.body;
    HttpClientResponse health = HttpGet(early + "/health");
    EXPECT_EQ(health.status, 503);
    EXPECT_EQ(health.body, "starting: 0 of 1 engines ready\n");
    HttpClientResponse completion = HttpPost(early + "/v1/completions", R"({"prompt":[1]})");
    EXPECT_EQ(completion.status, 503) << completion.body;
    EXPECT_EQ(json::parse(completion.body)["error"]["type"], "Service Unavailable");
    // Nothing to list before the engines' ready responses: refused, not an empty table.
    HttpClientResponse sources = HttpGet(early + "/kv_event_sources");
    EXPECT_EQ(sources.status, 503) << sources.body;
  }

  SimulatorOptions so;
  so.handshake_address = frontend.handshake_endpoint();
  so.steps = 0;
  so.rate_hz = 200;
  so.serve_requests = true;
  so.synthetic_requests = false;
  Simulator simulator(so);
  ASSERT_TRUE(simulator.Start().ok());
  s = frontend.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string base = "http://127.0.0.1:" + std::to_string(frontend.http_port());

  HttpClientResponse completion =
      HttpPost(base + "/v1/completions", R"({"prompt":[1,2,3],"max_tokens":3,"ignore_eos":true})");
  ASSERT_EQ(completion.status, 200) << completion.body << completion.error;
  EXPECT_EQ(json::parse(completion.body)["model"], "embedded");

  HttpClientResponse metrics = HttpGet(base + "/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.error;
  const std::string finished =
      R"(vllm:request_success_total{engine="0",finished_reason="length",model_name="embedded"})";
  EXPECT_NE(metrics.body.find(finished + " 1.0"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("# TYPE vllm:nixl_xfer_time_seconds histogram"), std::string::npos)
      << "the configured connector's families are registered at startup";
  EXPECT_NE(metrics.body.find(R"(enable_prefix_caching="True")"), std::string::npos)
      << "cache_config_info labels are Python's str() of the JSON values";
  EXPECT_EQ(HttpGet(base + "/health").status, 200);
  EXPECT_NE(metrics.body.find("vmetrics_engine_state{engine=\"0\",state=\"ready\"} 1.0\n"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("vmetrics_engine_up{engine=\"0\"} 1.0\n"), std::string::npos);

  HttpClientResponse version = HttpGet(base + "/embedder/version");
  EXPECT_EQ(version.status, 200);
  EXPECT_EQ(version.body, R"({"version":"embedded-1"})");

  simulator.RequestStop();
  frontend.Stop();
  (void)simulator.Wait();
  frontend.Stop();  // idempotent
}

// An embedder's route on a path the frontend serves is refused when the server starts: in
// Bind, before any engine is waited for.
TEST(FrontendFromOptions, ExtraRouteOnTheFrontendsOwnPathFailsBind) {
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  HttpRoute clash = VersionRoute();
  clash.method = "POST";
  clash.path = "/v1/completions";
  options.extra_routes.push_back(clash);
  Frontend frontend(options);
  Status s = frontend.Bind();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("HTTP: ", 0), 0u) << s.ToString();
  EXPECT_EQ(s.detail(), StatusDetail::kNone) << "neither the host nor the port";
  EXPECT_NE(s.message().find("POST /v1/completions: given twice"), std::string::npos)
      << s.ToString();
}

// Options that need no engine are checked by Bind, with the flag named, before any socket is
// bound or engine awaited.
TEST(FrontendOptionsCheck, BadOptionsFailBindNamingTheFlag) {
  struct Case {
    std::function<void(FrontendOptions*)> set;
    std::string message_part;
  };
  const Case cases[] = {
      {[](FrontendOptions* o) { o->kv_transfer_config = "not json"; }, "--kv-transfer-config"},
      {[](FrontendOptions* o) { o->speculative_config = "[1]"; }, "--speculative-config"},
      {[](FrontendOptions* o) { o->cache_config_info = "3"; }, "--cache-config-info"},
      {[](FrontendOptions* o) { o->data_parallel_size = 0; }, "--data-parallel-size"},
      {[](FrontendOptions* o) { o->max_loras = 0; }, "--max-loras"},
      {[](FrontendOptions* o) { o->engine_ready_timeout_s = 0; }, "--engine-ready-timeout"},
      {[](FrontendOptions* o) { o->web_config_file = "/nonexistent/web.yml"; },
       "/nonexistent/web.yml"},
      {[](FrontendOptions* o) {
         o->lora_modules = {{"sql", "/a/sql"}};
       },
       "--enable-lora"},
      {[](FrontendOptions* o) { o->handshake_address = "tcp://0.0.0.0:0"; }, "--advertise-address"},
      {[](FrontendOptions* o) {
         o->handshake_address.clear();
         o->data_parallel_address = "0.0.0.0";
       },
       "--advertise-address"},
      {[](FrontendOptions* o) { o->advertise_address = "0.0.0.0"; }, "--advertise-address"},
      {[](FrontendOptions* o) { o->max_model_len = -5; }, "--max-model-len"},
      {[](FrontendOptions* o) { o->max_label_value_bytes = 0; }, "--max-label-value-bytes"},
      {[](FrontendOptions* o) { o->max_label_value_bytes = SIZE_MAX; },  // "-1" wrapped
       "--max-label-value-bytes"},
      {[](FrontendOptions* o) { o->served_model_name = "model\xff"; }, "--served-model-name"},
      {[](FrontendOptions* o) { o->served_model_name = std::string(1025, 'm'); },
       "--served-model-name"},
      {[](FrontendOptions* o) { o->speculative_config = R"({"num_speculative_tokens":"3"})"; },
       "--speculative-config: num_speculative_tokens"},
      {[](FrontendOptions* o) {
         o->cache_config_info =
             R"({"block_size":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
       },
       "--cache-config-info: the value of \"block_size\" is nested more than 64 levels deep"},
  };
  for (const Case& c : cases) {
    FrontendOptions options;
    options.handshake_address = "tcp://127.0.0.1:0";
    c.set(&options);
    Frontend frontend(options);
    Status s = frontend.Bind();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message_part << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.message_part), std::string::npos) << s.ToString();
  }
}

TEST(FrontendOptionsCheck, HandshakeAddressInUseIsUnavailable) {
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  Frontend first(options);
  ASSERT_TRUE(first.Bind().ok());
  options.handshake_address = first.handshake_endpoint();
  Frontend second(options);
  Status s = second.Bind();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find(first.handshake_endpoint()), std::string::npos) << s.ToString();
}

// Stop from another thread ends a Start that waits for engines that never come (what a
// SIGINT during startup does in `vmetrics serve`).
TEST(FrontendLifecycle, StopEndsAStartWaitingForEngines) {
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  Frontend frontend(options);
  ASSERT_TRUE(frontend.Bind().ok());
  // Start waits for a HELLO that never comes (600 s by default); Stop ends the wait, or, if it
  // comes first, makes Start fail at once (the client's stop is sticky).
  std::future<Status> started = std::async(std::launch::async, [&] { return frontend.Start(); });
  frontend.Stop();
  ASSERT_EQ(started.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "Stop did not end the wait";
  const Status s = started.get();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

// Bound to every interface, the frontend tells the engines the advertised address, which
// they reach it at.
TEST(FrontendOptionsCheck, WildcardBindWithAnAdvertisedAddressServesEngines) {
  FrontendOptions options;
  options.handshake_address = "tcp://0.0.0.0:0";
  options.advertise_address = "127.0.0.1";
  options.http.port = 0;
  options.engine_ready_timeout_s = 30;
  Frontend frontend(options);
  Status s = frontend.Bind();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string hs = frontend.handshake_endpoint();
  SimulatorOptions so;
  so.handshake_address = "tcp://127.0.0.1" + hs.substr(hs.rfind(':'));
  so.steps = 0;
  so.rate_hz = 100;
  Simulator simulator(so);
  ASSERT_TRUE(simulator.Start().ok());
  s = frontend.Start();
  simulator.RequestStop();
  frontend.Stop();
  (void)simulator.Wait();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// An HTTP port in use fails Bind, naming the flags, before the engine sockets are bound (an
// engine told to connect would wait for a frontend that is about to exit).
TEST(FrontendOptionsCheck, HttpPortInUseFailsBindBeforeTheEngineSockets) {
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  Frontend first(options);
  ASSERT_TRUE(first.Bind().ok());
  ASSERT_NE(first.http_port(), 0);
  options.http.port = first.http_port();
  options.handshake_address = "ipc:///nonexistent-dir/never-bound";
  Frontend second(options);
  Status s = second.Bind();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message().rfind("--host/--port: ", 0), 0u) << s.ToString();
  EXPECT_EQ(s.detail(), StatusDetail::kHttpPort) << s.ToString();
}

// A host that does not resolve is named by its detail, as a port in use is by its own.
TEST(FrontendFromOptions, AnUnresolvableHostIsTheHttpHosts) {
  FrontendOptions options;
  options.handshake_address = "tcp://127.0.0.1:0";
  options.http.port = 0;
  options.http.host = "no-such-host.invalid";
  Frontend frontend(options);
  Status s = frontend.Bind();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message().rfind("--host/--port: ", 0), 0u) << s.ToString();
  EXPECT_EQ(s.detail(), StatusDetail::kHttpHost) << s.ToString();
}

// The errors of the OpenAI routes, also those the server answers for them, are vLLM's
// ErrorResponse with the type vLLM gives the status.
TEST(OpenAiRoutes, ErrorsAreInVllmsErrorFormat) {
  const HttpReply too_large = frontend::OpenAiErrorReply(413, "request body larger than 8 bytes");
  EXPECT_EQ(too_large.status, 413u);
  EXPECT_EQ(too_large.content_type, "application/json");
  // A Starlette HTTPException: the type is CPython's HTTPStatus phrase (vLLM's handlers/http.py).
  EXPECT_EQ(too_large.body,
            R"({"error":{"code":413,"message":"request body larger than 8 bytes","param":null,)"
            R"("type":"Request Entity Too Large"}})");
  EXPECT_EQ(json::parse(frontend::OpenAiErrorReply(400, "bad").body)["error"]["type"],
            "BadRequestError");
  EXPECT_EQ(json::parse(frontend::OpenAiErrorReply(404, "no").body)["error"]["type"],
            "NotFoundError");
  EXPECT_EQ(json::parse(frontend::OpenAiErrorReply(500, "boom").body)["error"]["type"],
            "InternalServerError");
  EXPECT_EQ(json::parse(frontend::OpenAiErrorReply(503, "stopping").body)["error"]["type"],
            "Service Unavailable");
  const std::vector<HttpRoute> routes = frontend::OpenAiRoutes({});
  std::vector<std::string> listed;
  for (const HttpRoute& route : routes) {
    listed.push_back(route.method + " " + route.path);
    ASSERT_TRUE(route.error_reply) << listed.back();
  }
  EXPECT_EQ(listed, (std::vector<std::string>{"POST /v1/completions", "POST /inference/v1/generate",
                                              "POST /abort_requests", "GET /load", "GET /v1/models",
                                              "GET /version", "GET /kv_event_sources", "GET /ping",
                                              "POST /ping"}));
  EXPECT_EQ(routes[0].error_reply(503, "the server is stopping").body,
            frontend::ErrorJson({503, "Service Unavailable", "the server is stopping", ""}));
}

}  // namespace
}  // namespace vmetrics
