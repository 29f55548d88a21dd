// SPDX-License-Identifier: Apache-2.0
// The bodies of the informational routes (openai_routes.h) built from what the engines
// reported: GET /kv_event_sources; and the routes' readiness guard, on a real HttpServer.
#include "openai_routes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_test_client.h"
#include "msgpack_from_json.h"
#include "vmetrics/http_server.h"

namespace vmetrics::frontend {
namespace {

using Json = nlohmann::ordered_json;

// A ready response's kv_events_config as an engine sends it: a msgpack map.
std::string Config(const char* json) { return MsgpackFromJson(Json::parse(json)); }

// The publisher configuration of a vLLM engine at rank `rank` (KVEventsConfig's fields in
// their order, as msgspec writes the dataclass).
std::string ZmqConfig(int rank, bool replay) {
  const std::string port = std::to_string(5557 + rank);
  const std::string replay_endpoint =
      replay ? "\"tcp://*:" + std::to_string(6557 + rank) + "\"" : "null";
  return Config((R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:)" + port +
                 R"(","replay_endpoint":)" + replay_endpoint +
                 R"(,"buffer_steps":10000,"hwm":100000,"max_queue_size":100000,)"
                 R"("topic":"kv-events"})")
                    .c_str());
}

TEST(KvEventSourcesJson, KeysEachRanksConfigByRankInRankOrder) {
  // Listed out of order, ranks past 9: numeric order, not the text order "10" < "2".
  const std::vector<KvEventSource> sources = {
      {10, ZmqConfig(10, false)}, {2, ZmqConfig(2, true)}, {0, ZmqConfig(0, false)}};
  EXPECT_EQ(KvEventSourcesJson(sources),
            R"({"0":{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557",)"
            R"("replay_endpoint":null,"buffer_steps":10000,"hwm":100000,"max_queue_size":100000,)"
            R"("topic":"kv-events"},)"
            R"("2":{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5559",)"
            R"("replay_endpoint":"tcp://*:6559","buffer_steps":10000,"hwm":100000,)"
            R"("max_queue_size":100000,"topic":"kv-events"},)"
            R"("10":{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5567",)"
            R"("replay_endpoint":null,"buffer_steps":10000,"hwm":100000,"max_queue_size":100000,)"
            R"("topic":"kv-events"}})");
}

TEST(KvEventSourcesJson, PassesTheEnginesMapThroughAsSent) {
  // A newer engine's field, and values a consumer must see as the engine bound them.
  const std::vector<KvEventSource> sources = {
      {0, Config(R"({"publisher":"zmq","endpoint":"tcp://10.0.0.1:41233",)"
                 R"("snapshot_endpoint":"tcp://10.0.0.1:41235","topic":""})")}};
  EXPECT_EQ(KvEventSourcesJson(sources),
            R"({"0":{"publisher":"zmq","endpoint":"tcp://10.0.0.1:41233",)"
            R"("snapshot_endpoint":"tcp://10.0.0.1:41235","topic":""}})");
}

TEST(KvEventSourcesJson, EnginesWithoutAPublisherAreLeftOut) {
  EXPECT_EQ(KvEventSourcesJson({}), "{}");
  EXPECT_EQ(KvEventSourcesJson({{0, ""}, {1, ""}}), "{}");
  EXPECT_EQ(KvEventSourcesJson({{0, ""}, {1, ZmqConfig(1, false)}}),
            "{\"1\":" +
                Json::parse(R"({"enable_kv_cache_events":true,"publisher":"zmq",)"
                            R"("endpoint":"tcp://*:5558","replay_endpoint":null,)"
                            R"("buffer_steps":10000,"hwm":100000,)"
                            R"("max_queue_size":100000,"topic":"kv-events"})")
                    .dump() +
                "}");
}

TEST(KvEventSourcesJson, TheFirstSourceOfARankIsKept) {
  EXPECT_EQ(KvEventSourcesJson(
                {{0, Config(R"({"endpoint":"first"})")}, {0, Config(R"({"endpoint":"second"})")}}),
            R"({"0":{"endpoint":"first"}})");
}

TEST(ApiKeyPathPrefixes, GuardKvEventSources) {
  const std::vector<std::string> prefixes = ApiKeyPathPrefixes();
  EXPECT_NE(std::find(prefixes.begin(), prefixes.end(), "/kv_event_sources"), prefixes.end());
}

// Each route is declared once and reads its context when a request comes: before the context
// is ready it answers 503 in vLLM's error format, after it answers from the context.
TEST(OpenAiRoutes, AnswerServiceUnavailableUntilTheirContextIsReady) {
  OpenAiRouteContext context;
  context.version = "9.9.9";
  std::atomic<const OpenAiRouteContext*> ready{nullptr};
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string(); };
  handlers.routes = OpenAiRoutes([&ready] { return ready.load(); });
  HttpServerOptions options;
  options.port = 0;
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();

  for (const char* path : {"/version", "/ping", "/kv_event_sources"}) {
    const http_test::HttpResponse r = http_test::Get(port, path);
    EXPECT_EQ(r.status, 503) << path;
    EXPECT_EQ(Json::parse(r.body)["error"]["message"], "the engines are not ready yet") << path;
  }
  ready.store(&context);
  const http_test::HttpResponse version = http_test::Get(port, "/version");
  EXPECT_EQ(version.status, 200);
  EXPECT_EQ(Json::parse(version.body), Json::parse(VersionJson("9.9.9", {})));
  EXPECT_EQ(Json::parse(version.body)["version"], "9.9.9");
  EXPECT_EQ(http_test::Get(port, "/ping").status, 200);
  EXPECT_EQ(http_test::Get(port, "/kv_event_sources").body, "{}");
}

}  // namespace
}  // namespace vmetrics::frontend
