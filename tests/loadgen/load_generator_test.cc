// SPDX-License-Identifier: Apache-2.0
// LoadGenerator and BenchServe (tools/loadgen) against a stand-in completions route on
// vmetrics' own HTTP server: every request sent, timed and counted; failures reported with the
// server's answer; bench-serve over https with a CA file and basic authentication.
#include "loadgen/load_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/bench_serve.h"
#include "security_test_util.h"
#include "vmetrics/http_server.h"
#include "vmetrics/web_config.h"

namespace vmetrics::loadgen {
namespace {

using nlohmann::json;

// A completions endpoint that answers a streamed request as vmetrics serve does: one event
// per token (max_tokens of them), then [DONE]; it counts the requests per model.
class StandInCompletions {
 public:
  HttpRoute Route() {
    HttpRoute route;
    route.method = "POST";
    route.path = "/v1/completions";
    route.handler = [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      const json body = json::parse(request.body, nullptr, false);
      if (!body.is_object() || !body.value("stream", false)) {
        exchange->Reply(400, "application/json", R"({"error":{"message":"stream only"}})");
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++by_model_[body.value("model", std::string("-"))];
        prompt_tokens_ += body["prompt"].size();
      }
      exchange->StartStream("text/event-stream");
      const int64_t tokens = body.value("max_tokens", int64_t{1});
      for (int64_t i = 0; i < tokens; ++i) {
        exchange->Write(R"(data: {"choices":[{"index":0,"token_ids":[7]}]})"
                        "\n\n");
      }
      exchange->Write("data: [DONE]\n\n");
      exchange->End();
    };
    return route;
  }

  std::map<std::string, int> by_model() {
    std::lock_guard<std::mutex> lock(mu_);
    return by_model_;
  }
  size_t prompt_tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return prompt_tokens_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> by_model_;
  size_t prompt_tokens_ = 0;
};

std::unique_ptr<HttpServer> StartServer(std::vector<HttpRoute> routes,
                                        std::optional<WebConfig> web_config = std::nullopt) {
  HttpServerOptions options;
  options.port = 0;
  options.threads = 4;
  options.web_config = std::move(web_config);
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string(); };
  handlers.routes = std::move(routes);
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

TEST(LoadGenerator, SendsEveryRequestAndCountsTokens) {
  StandInCompletions completions;
  std::unique_ptr<HttpServer> server = StartServer({completions.Route()});
  ASSERT_NE(server, nullptr);
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1/completions";
  o.requests = 30;
  o.concurrency = 4;
  o.prompt_len_min = o.prompt_len_max = 8;
  o.max_tokens_min = o.max_tokens_max = 5;
  o.models = {"base", "lora-a", "lora-b"};
  const LoadReport r = LoadGenerator(o).Run();
  EXPECT_EQ(r.completed, 30u) << r.first_error;
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(r.prompt_tokens, 30u * 8);
  EXPECT_EQ(r.output_tokens, 30u * 5);
  EXPECT_GT(r.ttft_ms[3], 0);
  EXPECT_GE(r.e2e_ms[3], r.ttft_ms[3]);
  EXPECT_EQ(completions.prompt_tokens(), 30u * 8);
  const std::map<std::string, int> expected = {{"base", 10}, {"lora-a", 10}, {"lora-b", 10}};
  EXPECT_EQ(completions.by_model(), expected) << "models are taken in turn";
  const std::string text = FormatLoadReport(r);
  EXPECT_NE(text.find("completed requests:     30"), std::string::npos) << text;
}

// A URL ending in /inference/v1/generate gets GenerateRequests: token_ids, and the sampling
// fields inside sampling_params; the stream chunks are counted the same way.
TEST(LoadGenerator, GenerateUrlSendsGenerateRequests) {
  std::mutex mu;
  std::vector<json> bodies;
  HttpRoute route;
  route.method = "POST";
  route.path = "/inference/v1/generate";
  route.handler = [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    const json body = json::parse(request.body, nullptr, false);
    {
      std::lock_guard<std::mutex> lock(mu);
      bodies.push_back(body);
    }
    if (!body.is_object() || !body.contains("token_ids") || !body.contains("sampling_params") ||
        body.contains("prompt") || body.contains("max_tokens")) {
      exchange->Reply(400, "application/json", R"({"error":{"message":"not a generate body"}})");
      return;
    }
    exchange->StartStream("text/event-stream");
    const int64_t tokens = body["sampling_params"].value("max_tokens", int64_t{1});
    for (int64_t i = 0; i < tokens; ++i) {
      exchange->Write(
          R"(data: {"request_id":"generate-tokens-1","choices":[{"index":0,"token_ids":[7]}]})"
          "\n\n");
    }
    exchange->Write("data: [DONE]\n\n");
    exchange->End();
  };
  std::unique_ptr<HttpServer> server = StartServer({route});
  ASSERT_NE(server, nullptr);
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/inference/v1/generate";
  o.requests = 10;
  o.concurrency = 2;
  o.prompt_len_min = o.prompt_len_max = 6;
  o.max_tokens_min = o.max_tokens_max = 3;
  const LoadReport r = LoadGenerator(o).Run();
  EXPECT_EQ(r.completed, 10u) << r.first_error;
  EXPECT_EQ(r.output_tokens, 10u * 3);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(bodies.size(), 10u);
  EXPECT_EQ(bodies[0]["token_ids"].size(), 6u) << bodies[0];
  EXPECT_EQ(bodies[0]["sampling_params"]["ignore_eos"], true) << bodies[0];
  EXPECT_EQ(bodies[0]["sampling_params"]["n"], 1) << bodies[0];
  EXPECT_EQ(bodies[0]["stream"], true) << bodies[0];
}

// stream = false: the request says so, and the answer's choices are counted (n of them, each
// with its token_ids); TTFT is the whole answer's time.
TEST(LoadGenerator, WholeAnswersAreAskedForAndCounted) {
  std::mutex mu;
  std::vector<json> bodies;
  HttpRoute route;
  route.method = "POST";
  route.path = "/v1/completions";
  route.handler = [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    const json body = json::parse(request.body, nullptr, false);
    {
      std::lock_guard<std::mutex> lock(mu);
      bodies.push_back(body);
    }
    if (!body.is_object() || body.value("stream", true)) {
      exchange->Reply(400, "application/json", R"({"error":{"message":"whole answers only"}})");
      return;
    }
    json choices = json::array();
    for (int64_t i = 0; i < body.value("n", int64_t{1}); ++i) {
      choices.push_back({{"index", i},
                         {"token_ids", std::vector<int64_t>(
                                           static_cast<size_t>(body.value("max_tokens", 1)), 7)}});
    }
    exchange->Reply(200, "application/json", json{{"choices", choices}}.dump());
  };
  std::unique_ptr<HttpServer> server = StartServer({route});
  ASSERT_NE(server, nullptr);
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1/completions";
  o.stream = false;
  o.requests = 6;
  o.concurrency = 2;
  o.n = 2;
  o.prompt_len_min = o.prompt_len_max = 4;
  o.max_tokens_min = o.max_tokens_max = 3;
  const LoadReport r = LoadGenerator(o).Run();
  EXPECT_EQ(r.completed, 6u) << r.first_error;
  EXPECT_EQ(r.output_tokens, 6u * 2 * 3);
  EXPECT_EQ(r.ttft_ms[3], r.e2e_ms[3]);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(bodies.size(), 6u);
  EXPECT_EQ(bodies[0]["stream"], false) << bodies[0];
}

// Chunks and answers of shapes a completions server does not send are skipped, never thrown
// on (a throw would end the benchmark); an error chunk without a worded message is still a
// failure.
TEST(LoadGenerator, ChunksOfOtherShapesAreSkipped) {
  HttpRoute route;
  route.method = "POST";
  route.path = "/v1/completions";
  route.handler = [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    const json body = json::parse(request.body, nullptr, false);
    if (!body.value("stream", true)) {
      exchange->Reply(200, "application/json", R"({"choices":[7,{"token_ids":[1,2]},"x"]})");
      return;
    }
    exchange->StartStream("text/event-stream");
    for (const char* data : {"[1,2]", R"({"choices":5})", R"({"choices":[7,null]})",
                             R"({"choices":[{"token_ids":[3]}]})", R"({"error":{"message":4}})"}) {
      exchange->Write(std::string("data: ") + data + "\n\n");
    }
    exchange->Write("data: [DONE]\n\n");
    exchange->End();
  };
  std::unique_ptr<HttpServer> server = StartServer({route});
  ASSERT_NE(server, nullptr);
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1/completions";
  o.requests = 2;
  o.concurrency = 1;
  const LoadReport streamed = LoadGenerator(o).Run();
  EXPECT_EQ(streamed.completed, 0u);
  EXPECT_EQ(streamed.failed, 2u);
  EXPECT_EQ(streamed.first_error, "error event");
  o.stream = false;
  const LoadReport whole = LoadGenerator(o).Run();
  EXPECT_EQ(whole.completed, 2u) << whole.first_error;
  EXPECT_EQ(whole.output_tokens, 2u * 2);
}

TEST(LoadGenerator, RefusedRequestsAreFailuresWithTheServersAnswer) {
  HttpRoute refuse;
  refuse.method = "POST";
  refuse.path = "/v1/completions";
  refuse.handler = [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->Reply(400, "application/json", R"({"error":{"message":"no"}})");
  };
  std::unique_ptr<HttpServer> server = StartServer({refuse});
  ASSERT_NE(server, nullptr);
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1/completions";
  o.requests = 4;
  o.concurrency = 2;
  const LoadReport r = LoadGenerator(o).Run();
  EXPECT_EQ(r.completed, 0u);
  EXPECT_EQ(r.failed, 4u);
  EXPECT_NE(r.first_error.find("HTTP 400"), std::string::npos) << r.first_error;
}

TEST(BenchServe, RefusesOptionsItCannotUseBeforeSending) {
  BenchServeOptions o;
  o.load.url = "ftp://127.0.0.1/v1/completions";
  int printed = 0;
  auto print = [&](std::string_view) { ++printed; };
  Result<LoadReport> r = BenchServe(o, print);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--url"), std::string::npos) << r.status().message();
  o.load.url = "http://127.0.0.1:1/v1/completions";
  o.load.requests = 0;
  o.load.duration_s = 0;
  r = BenchServe(o, print);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--requests"), std::string::npos);
  EXPECT_EQ(printed, 0);
}

// What `vmetrics bench-serve --url https://... --ca-file --user --password` runs.
TEST(BenchServe, OverHttpsWithBasicAuthentication) {
  const security_test::TestCertificate cert = security_test::MakeSelfSignedCertificate();
  security_test::ScratchDirectory scratch;
  WebConfig config;
  config.tls = TlsServerConfig{"server.crt", "server.key",       cert.cert_pem,
                               cert.key_pem, TlsVersion::kTls12, TlsVersion::kTls13};
  config.basic_auth_users["bench"] = security_test::BcryptHash("secret");
  StandInCompletions completions;
  std::unique_ptr<HttpServer> server = StartServer({completions.Route()}, std::move(config));
  ASSERT_NE(server, nullptr);
  BenchServeOptions o;
  o.load.url = "https://127.0.0.1:" + std::to_string(server->port()) + "/v1/completions";
  o.load.client.ca_file = scratch.WriteFile("ca.pem", cert.cert_pem);
  o.load.client.user = "bench";
  o.load.client.password = "secret";
  o.load.requests = 12;
  o.load.concurrency = 3;
  o.prompt_len = 4;
  o.max_tokens = 3;
  std::string printed;
  Result<LoadReport> r = BenchServe(o, [&](std::string_view text) { printed.append(text); });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->completed, 12u) << r->first_error;
  EXPECT_EQ(r->output_tokens, 12u * 3);
  EXPECT_EQ(printed.rfind("bench-serve: https://127.0.0.1:", 0), 0u) << printed;
  EXPECT_NE(printed.find("completed requests:     12"), std::string::npos) << printed;

  o.load.client.password = "wrong";
  o.load.requests = 2;
  r = BenchServe(o, [](std::string_view) {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->failed, 2u);
  EXPECT_NE(r->first_error.find("HTTP 401"), std::string::npos) << r->first_error;
}

}  // namespace
}  // namespace vmetrics::loadgen
