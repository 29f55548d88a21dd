// SPDX-License-Identifier: Apache-2.0
// vLLM's --api-key in the HTTP server (HttpServerOptions::api_keys, src/server/api_key.h): the
// Bearer check without sockets, then over loopback sockets: guarded paths answer 401 with
// vLLM's body before routing and without reading a body, the others stay open.
#include "api_key.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "http_test_client.h"
#include "security_test_util.h"
#include "vmetrics/http_server.h"
#include "vmetrics/web_config.h"

namespace vmetrics {
namespace {

using http_test::Exchange;
using http_test::HttpResponse;
using http_test::Request;

// As vLLM's AuthenticationMiddleware.verify_token: scheme case-insensitive, the key is all
// after the first space, any of the keys.
TEST(ApiKeyCheck, AcceptsBearerWithAnyKeyAsVllmDoes) {
  const internal::ApiKeyCheck check({"sk-1", "sk two"}, {"/v1"});
  EXPECT_TRUE(check.Accepts("Bearer sk-1"));
  EXPECT_TRUE(check.Accepts("bearer sk-1"));
  EXPECT_TRUE(check.Accepts("BEARER sk two"));
  for (const char* refused : {"", "Bearer", "Bearer ", "Bearer sk-", "Bearer sk-1 ", "Bearer  sk-1",
                              "Basic sk-1", "Bearersk-1", "Token sk-1", "Bearer sk-2"}) {
    EXPECT_FALSE(check.Accepts(refused)) << refused;
  }
}

TEST(ApiKeyCheck, GuardsPrefixesButNotOptions) {
  const internal::ApiKeyCheck check({"k"}, {"/v1", "/abort_requests"});
  EXPECT_TRUE(check.Guards("POST", "/v1/completions"));
  EXPECT_TRUE(check.Guards("GET", "/v1x"));  // str.startswith, as vLLM
  EXPECT_TRUE(check.Guards("POST", "/abort_requests"));
  EXPECT_FALSE(check.Guards("OPTIONS", "/v1/completions"));
  EXPECT_FALSE(check.Guards("GET", "/metrics"));
  EXPECT_FALSE(check.Guards("GET", "/health"));
  EXPECT_FALSE(check.Guards("GET", "/"));
  const internal::ApiKeyCheck everything({"k"}, {});
  EXPECT_TRUE(everything.Guards("GET", "/metrics"));
}

class ApiKeyServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpHandlers handlers;
    handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
    HttpRoute route;
    route.method = "POST";
    route.path = "/v1/echo";
    route.handler = [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      calls_.fetch_add(1);
      exchange->Reply(200, "text/plain", request.body);
    };
    handlers.routes.push_back(std::move(route));
    HttpServerOptions options;
    options.port = 0;
    options.api_keys = {"sk-1", "sk-2"};
    options.api_key_path_prefixes = {"/v1", "/abort_requests"};
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  HttpResponse Post(const std::string& target,
                    const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<std::pair<std::string, std::string>> all = headers;
    all.emplace_back("Content-Length", "2");
    return Exchange(server_->port(), Request("POST", target, all) + "{}");
  }

  std::atomic<int> calls_{0};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(ApiKeyServerTest, GuardedPathsWithoutTheKeyAre401WithVllmsBody) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> refused = {
      {},
      {{"Authorization", "Bearer sk-3"}},
      {{"Authorization", "Basic c2stMQ=="}},
      {{"Authorization", "Bearer  sk-1"}},
      {{"Authorization", "sk-1"}},
      // Two headers, one right: refused (a proxy could read the other).
      {{"Authorization", "Bearer sk-1"}, {"Authorization", "Bearer sk-3"}},
  };
  for (const auto& headers : refused) {
    for (const char* target : {"/v1/echo", "/v1/unknown", "/abort_requests"}) {
      HttpResponse r = Post(target, headers);
      EXPECT_EQ(r.status, 401) << target;
      EXPECT_EQ(r.body, R"({"error":"Unauthorized"})") << target;
      EXPECT_EQ(r.Header("content-type"), "application/json") << target;
    }
  }
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(ApiKeyServerTest, EitherKeyPassesAndOpenPathsNeedNone) {
  for (const char* authorization : {"Bearer sk-1", "bearer sk-2"}) {
    HttpResponse r = Post("/v1/echo", {{"Authorization", authorization}});
    EXPECT_EQ(r.status, 200) << authorization;
    EXPECT_EQ(r.body, "{}");
  }
  EXPECT_EQ(calls_.load(), 2);
  // With the key, an unknown guarded path is 404 as before.
  EXPECT_EQ(Post("/v1/unknown", {{"Authorization", "Bearer sk-1"}}).status, 404);
  EXPECT_EQ(http_test::Get(server_->port(), "/metrics").status, 200);
  EXPECT_EQ(http_test::Get(server_->port(), "/health").status, 200);
  EXPECT_EQ(http_test::Get(server_->port(), "/nothing").status, 404);
  // OPTIONS is not guarded (vLLM's CORS preflight); the route has no OPTIONS.
  EXPECT_EQ(Exchange(server_->port(), Request("OPTIONS", "/v1/echo")).status, 405);
}

TEST(ApiKeyServer, UnusableKeysAndBasicAuthBesideThemAreRefused) {
  auto start = [](HttpServerOptions options) {
    options.port = 0;
    HttpHandlers handlers;
    handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
    return HttpServer::Start(std::move(options), std::move(handlers));
  };
  for (const char* key : {"", " sk", "sk ", "s\nk", "s\x7fk"}) {
    HttpServerOptions options;
    options.api_keys = {key};
    Result<std::unique_ptr<HttpServer>> server = start(options);
    ASSERT_FALSE(server.ok()) << key;
    EXPECT_NE(server.status().message().find("--api-key"), std::string::npos);
  }
  HttpServerOptions options;
  options.api_keys = {"sk"};
  WebConfig web;
  web.basic_auth_users["user"] = security_test::BcryptHash("password");
  options.web_config = web;
  Result<std::unique_ptr<HttpServer>> server = start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("--api-key and basic_auth_users"), std::string::npos);
}

}  // namespace
}  // namespace vmetrics
