// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of HttpServer over real sockets on loopback, each server on an ephemeral
// port. No sleeps: Start returns with the socket listening, and where a test needs a handler
// to be running it waits on a promise the handler fulfils.
#include "vmetrics/http_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "vmetrics/exposition.h"
#include "vmetrics/registry.h"

namespace vmetrics {
namespace {

using namespace std::string_literals;

using http_test::Exchange;
using http_test::ExchangeInTurn;
using http_test::ExchangeOptions;
using http_test::Get;
using http_test::Gunzip;
using http_test::HttpResponse;
using http_test::Request;

// What Prometheus 2.42 sends on every scrape (docs/design.md §2.3).
constexpr char kPrometheusAccept[] =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

// Bodies large enough to span several TCP segments and to be worth compressing.
std::string MakeBody(ExpositionFormat format) {
  std::string body =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n";
  for (int engine = 0; engine < 400; ++engine) {
    body += "vllm:num_requests_running{engine=\"" + std::to_string(engine) +
            "\",model_name=\"meta-llama/Llama-3.1-8B-Instruct\"} " + std::to_string(engine % 7) +
            ".0\n";
  }
  if (format == ExpositionFormat::kOpenMetrics) body += "# EOF\n";
  return body;
}

std::unique_ptr<HttpServer> StartOrDie(HttpServerOptions options, HttpHandlers handlers) {
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

HttpServerOptions EphemeralLoopback() {
  HttpServerOptions options;
  options.port = 0;
  return options;
}

bool RejectedOrClosed(const HttpResponse& r) {
  return r.status == 0 || (r.status >= 400 && r.status < 500);
}

bool Ipv6LoopbackAvailable() {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  const bool ok = bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartOrDie(EphemeralLoopback(), Handlers());
    ASSERT_NE(server_, nullptr);
  }

  HttpHandlers Handlers() {
    HttpHandlers handlers;
    handlers.render_metrics = [this](ExpositionFormat format) {
      renders_.fetch_add(1, std::memory_order_relaxed);
      return format == ExpositionFormat::kOpenMetrics ? om_body_ : text_body_;
    };
    handlers.health = [this] {
      std::lock_guard<std::mutex> lock(health_mu_);
      return health_;
    };
    return handlers;
  }

  void SetHealth(bool healthy, std::string body) {
    std::lock_guard<std::mutex> lock(health_mu_);
    health_ = HealthReport{healthy, std::move(body)};
  }

  // The request that must still work after every abuse.
  void ExpectStillServes() {
    HttpResponse r = Get(port(), "/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, text_body_);
  }

  uint16_t port() const { return server_->port(); }

  const std::string text_body_ = MakeBody(ExpositionFormat::kText);
  const std::string om_body_ = MakeBody(ExpositionFormat::kOpenMetrics);
  std::atomic<int> renders_{0};
  std::mutex health_mu_;
  HealthReport health_{true, "ok"};
  std::unique_ptr<HttpServer> server_;
};

// ---- Start, port, Stop ----

TEST_F(HttpServerTest, EphemeralPortIsReadableAfterStart) { EXPECT_NE(port(), 0); }

TEST(HttpServerStart, RequiresRenderMetricsHandler) {
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(EphemeralLoopback(), {});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(server.status().message().find("render_metrics"), std::string::npos);
}

TEST(HttpServerStart, RejectsOptionsOutOfRange) {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string(); };
  HttpServerOptions no_threads = EphemeralLoopback();
  no_threads.threads = 0;
  HttpServerOptions tiny_pool = EphemeralLoopback();
  tiny_pool.max_request_bytes = 100;
  HttpServerOptions fewer_connections_than_threads = EphemeralLoopback();
  fewer_connections_than_threads.threads = 4;
  fewer_connections_than_threads.max_connections = 2;
  for (const HttpServerOptions& options : {no_threads, tiny_pool, fewer_connections_than_threads}) {
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, handlers);
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(HttpServerTest, PortInUseFailsWithTheAddressInTheMessage) {
  HttpServerOptions options = EphemeralLoopback();
  options.port = port();
  Result<std::unique_ptr<HttpServer>> second = HttpServer::Start(options, Handlers());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(port())),
            std::string::npos)
      << second.status().message();
  ExpectStillServes();
}

TEST_F(HttpServerTest, StopIsIdempotentAndClosesTheSocket) {
  const uint16_t bound = port();
  server_->Stop();
  server_->Stop();
  EXPECT_EQ(server_->port(), bound);
  EXPECT_FALSE(Get(bound, "/metrics").connected);
}

TEST(HttpServerStart, SingleThreadServes) {
  HttpServerOptions options = EphemeralLoopback();
  options.threads = 1;
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  std::unique_ptr<HttpServer> server = StartOrDie(options, handlers);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(server->port(), "/metrics").body, "up 1.0\n");
}

TEST(HttpServerStart, Ipv6LoopbackLiteral) {
  if (!Ipv6LoopbackAvailable()) GTEST_SKIP() << "no IPv6 loopback on this host";
  HttpServerOptions options = EphemeralLoopback();
  options.host = "::1";
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  std::unique_ptr<HttpServer> server = StartOrDie(options, handlers);
  ASSERT_NE(server, nullptr);
  ExchangeOptions v6;
  v6.host = "::1";
  HttpResponse r = Exchange(server->port(), Request("GET", "/metrics"), v6);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "up 1.0\n");
  // Bound to ::1 only, as asked.
  EXPECT_FALSE(Get(server->port(), "/metrics").connected);
}

TEST(HttpServerStart, UnspecifiedIpv6AddressAlsoAcceptsIpv4) {
  if (!Ipv6LoopbackAvailable()) GTEST_SKIP() << "no IPv6 on this host";
  HttpServerOptions options = EphemeralLoopback();
  options.host = "::";
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  std::unique_ptr<HttpServer> server = StartOrDie(options, handlers);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
  ExchangeOptions v6;
  v6.host = "::1";
  EXPECT_EQ(Exchange(server->port(), Request("GET", "/metrics"), v6).status, 200);
}

// ---- /metrics and negotiation ----

TEST_F(HttpServerTest, PlainRequestGetsTextFormatAndTheHandlerBody) {
  HttpResponse r = Get(port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), kContentTypeText004);
  EXPECT_FALSE(r.HasHeader("Content-Encoding"));
  EXPECT_EQ(r.body, text_body_);
}

TEST_F(HttpServerTest, OpenMetricsAcceptGetsOpenMetrics) {
  HttpResponse r =
      Get(port(), "/metrics", {{"Accept", "application/openmetrics-text; version=1.0.0"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), kContentTypeOpenMetrics100);
  EXPECT_EQ(r.body, om_body_);
}

TEST_F(HttpServerTest, GzipAcceptedBodyInflatesToExactlyThePlainBody) {
  HttpResponse r = Get(port(), "/metrics", {{"Accept-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), kContentTypeText004);
  EXPECT_EQ(r.Header("Content-Encoding"), "gzip");
  EXPECT_LT(r.body.size(), text_body_.size());
  std::string inflated;
  ASSERT_TRUE(Gunzip(r.body, &inflated));
  EXPECT_EQ(inflated, text_body_);
}

TEST_F(HttpServerTest, PrometheusScrapeGetsGzippedOpenMetrics) {
  HttpResponse r =
      Get(port(), "/metrics", {{"Accept", kPrometheusAccept}, {"Accept-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), kContentTypeOpenMetrics100);
  EXPECT_EQ(r.Header("Content-Encoding"), "gzip");
  std::string inflated;
  ASSERT_TRUE(Gunzip(r.body, &inflated));
  EXPECT_EQ(inflated, om_body_);
}

// prometheus_client joins repeated Accept headers with "," before choosing; so do we.
TEST_F(HttpServerTest, RepeatedAcceptHeadersAreConsideredTogether) {
  HttpResponse r = Get(port(), "/metrics",
                       {{"Accept", "text/plain"}, {"Accept", "application/openmetrics-text"}});
  EXPECT_EQ(r.Header("Content-Type"), kContentTypeOpenMetrics100);
}

TEST_F(HttpServerTest, HeadSendsTheHeadersOfGetWithoutABody) {
  ExchangeOptions head;
  head.head = true;
  HttpResponse r = Exchange(port(), Request("HEAD", "/metrics"), head);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), kContentTypeText004);
  EXPECT_EQ(r.Header("Content-Length"), std::to_string(text_body_.size()));
  EXPECT_TRUE(r.body.empty());
}

TEST_F(HttpServerTest, QueryStringAndTrailingSlashDoNotChangeTheRoute) {
  for (const char* target :
       {"/metrics?name[]=vllm:num_requests_running", "/metrics/", "/metrics/?x=1"}) {
    HttpResponse r = Get(port(), target);
    EXPECT_EQ(r.status, 200) << target;
    EXPECT_EQ(r.body, text_body_) << target;
  }
}

// Prometheus keeps its scrape connection open; so must the server.
TEST_F(HttpServerTest, KeepAliveConnectionServesSeveralRequests) {
  std::vector<HttpResponse> replies =
      ExchangeInTurn(port(), {Request("GET", "/metrics", {}, /*close=*/false),
                              Request("GET", "/health", {}, /*close=*/false),
                              Request("GET", "/metrics", {{"Accept-Encoding", "gzip"}})});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body, text_body_);
  EXPECT_NE(replies[0].Header("Connection"), "close");
  EXPECT_EQ(replies[1].status, 200);
  EXPECT_EQ(replies[1].body, "ok");
  EXPECT_EQ(replies[2].status, 200);
  std::string inflated;
  ASSERT_TRUE(Gunzip(replies[2].body, &inflated));
  EXPECT_EQ(inflated, text_body_);
}

// A GET that announces a body is answered at once and its connection closed, so the body is
// never read.
TEST_F(HttpServerTest, GetWithABodyIsAnsweredAndClosed) {
  std::vector<HttpResponse> replies = ExchangeInTurn(
      port(), {"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello",
               Request("GET", "/metrics")});
  ASSERT_FALSE(replies.empty());
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body, text_body_);
  EXPECT_EQ(replies[0].Header("Connection"), "close");
  ExpectStillServes();
}

// The server with the real writers and a registry: what the CLI's `serve` wires up.
TEST(HttpServerIntegration, ServesTheWritersOutputForARegistry) {
  FixedClock clock(123.456);
  Registry registry(&clock);
  Family& family = registry.AddFamily({"vllm:num_preemptions",
                                       MetricType::kCounter,
                                       "Cumulative number of preemption from the "
                                       "engine.",
                                       {"model_name", "engine"}});
  family.GetOrCreate({"m", "0"})->As<Counter>()->Add(3);
  HttpHandlers handlers;
  handlers.render_metrics = [&registry](ExpositionFormat format) {
    std::string out;
    if (format == ExpositionFormat::kOpenMetrics) {
      WriteOpenMetrics(registry, {}, &out);
    } else {
      WriteText(registry, {}, &out);
    }
    return out;
  };
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralLoopback(), handlers);
  ASSERT_NE(server, nullptr);

  std::string text;
  WriteText(registry, {}, &text);
  HttpResponse plain = Get(server->port(), "/metrics");
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.body, text);
  EXPECT_NE(plain.body.find("vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 3.0\n"),
            std::string::npos)
      << plain.body;

  std::string openmetrics;
  WriteOpenMetrics(registry, {}, &openmetrics);
  HttpResponse scrape =
      Get(server->port(), "/metrics", {{"Accept", kPrometheusAccept}, {"Accept-Encoding", "gzip"}});
  std::string inflated;
  ASSERT_TRUE(Gunzip(scrape.body, &inflated));
  EXPECT_EQ(inflated, openmetrics);
}

// ---- /health ----

TEST_F(HttpServerTest, HealthFollowsTheHandler) {
  HttpResponse up = Get(port(), "/health");
  EXPECT_EQ(up.status, 200);
  EXPECT_EQ(up.body, "ok");

  SetHealth(false, "engine 1 is dead");
  HttpResponse down = Get(port(), "/health");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.body, "engine 1 is dead");
  EXPECT_EQ(down.Header("Content-Type"), "text/plain; charset=utf-8");

  SetHealth(true, "");
  HttpResponse again = Get(port(), "/health");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, "");
  EXPECT_FALSE(again.HasHeader("Content-Type"));
}

TEST(HttpServerHealth, UnsetHandlerMeansHealthy) {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string(); };
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralLoopback(), handlers);
  ASSERT_NE(server, nullptr);
  HttpResponse r = Get(server->port(), "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
}

// ---- errors ----

TEST_F(HttpServerTest, UnknownPathIs404) {
  for (const char* target : {"/", "/metricsz", "/health/", "/v1/models", "/favicon.ico"}) {
    HttpResponse r = Get(port(), target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.body, R"({"detail":"Not Found"})") << target;
  }
  EXPECT_EQ(Exchange(port(), Request("POST", "/nowhere")).status, 404);
}

TEST_F(HttpServerTest, OtherMethodsOnKnownPathsAre405WithAllow) {
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "get"}) {
    for (const char* target : {"/metrics", "/health"}) {
      HttpResponse r = Exchange(port(), Request(method, target));
      EXPECT_EQ(r.status, 405) << method << " " << target;
      EXPECT_EQ(r.Header("Allow"), "GET, HEAD") << method << " " << target;
    }
  }
  EXPECT_EQ(renders_.load(), 0);
}

TEST_F(HttpServerTest, PostWithABodyIsRefusedWithoutReadingIt) {
  const std::string body(200 * 1024, 'x');
  HttpResponse r = Exchange(port(),
                            "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Content-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_TRUE(r.status == 405 || r.status == 0) << r.status;
  ExpectStillServes();
}

TEST_F(HttpServerTest, GarbageRequestLinesAreRejected) {
  // ""s literals: some of these carry NUL bytes that must be sent.
  const std::string garbage[] = {
      "GARBAGE\r\n\r\n"s,
      "GET\r\n\r\n"s,
      "GET /metrics\r\n\r\n"s,                                  // HTTP/0.9: no version
      "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"s,  // a TLS ClientHello
      "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n"s,
      "GET /metrics HTTP/1.1\r\n: no name\r\n\r\n"s,
  };
  for (const std::string& raw : garbage) {
    HttpResponse r = Exchange(port(), raw);
    EXPECT_TRUE(RejectedOrClosed(r))
        << "status " << r.status << " for " << ::testing::PrintToString(raw);
  }
  ExpectStillServes();
}

// An unfinished request holds its connection only until connection_timeout_s. The wait is the
// behaviour under test (one second), not synchronisation.
TEST(HttpServerLimits, IncompleteRequestIsClosedAfterTheConnectionTimeout) {
  HttpServerOptions options = EphemeralLoopback();
  options.connection_timeout_s = 1;
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  std::unique_ptr<HttpServer> server = StartOrDie(options, handlers);
  ASSERT_NE(server, nullptr);
  const auto start = std::chrono::steady_clock::now();
  HttpResponse r = Exchange(server->port(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(RejectedOrClosed(r)) << r.status;
  // Well under the client's own 10 s bound: the server closed it, not the client.
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
}

TEST_F(HttpServerTest, OneMebibyteHeaderIsRejected) {
  const std::string raw =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(1 << 20, 'a') +
      "\r\n\r\n";
  HttpResponse r = Exchange(port(), raw);
  EXPECT_TRUE(RejectedOrClosed(r)) << r.status;
  ExpectStillServes();
}

TEST_F(HttpServerTest, LongUriIsRejected) {
  HttpResponse r = Get(port(), "/metrics?" + std::string(200 * 1024, 'q'));
  EXPECT_TRUE(RejectedOrClosed(r)) << r.status;
  ExpectStillServes();
}

TEST_F(HttpServerTest, FiveHundredHeadersAre431) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (int i = 0; i < 500; ++i) headers.emplace_back("X-H" + std::to_string(i), "v");
  HttpResponse r = Get(port(), "/metrics", headers);
  EXPECT_EQ(r.status, 431);
  EXPECT_EQ(renders_.load(), 0);
  ExpectStillServes();
}

TEST(HttpServerErrors, ThrowingHandlerIs500AndTheServerCarriesOn) {
  std::atomic<bool> fail{true};
  std::mutex log_mu;
  std::vector<std::string> logged;
  HttpHandlers handlers;
  handlers.render_metrics = [&](ExpositionFormat) -> std::string {
    if (fail.load()) throw std::runtime_error("registry exploded");
    return "up 1.0\n";
  };
  handlers.log = [&](std::string_view message) {
    std::lock_guard<std::mutex> lock(log_mu);
    logged.emplace_back(message);
  };
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralLoopback(), handlers);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(server->port(), "/metrics").status, 500);
  fail = false;
  EXPECT_EQ(Get(server->port(), "/metrics").body, "up 1.0\n");
  server->Stop();
  std::lock_guard<std::mutex> lock(log_mu);
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged[0].find("registry exploded"), std::string::npos) << logged[0];
}

// ---- concurrency ----

TEST_F(HttpServerTest, SixteenConcurrentScrapersAllSucceed) {
  constexpr int kClients = 16;
  constexpr int kScrapesEach = 50;
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kScrapesEach; ++i) {
        // Alternate formats and encodings so workers render both concurrently.
        std::vector<std::pair<std::string, std::string>> headers;
        if ((c + i) % 2 == 1) headers.emplace_back("Accept", kPrometheusAccept);
        if ((c + i) % 3 == 0) headers.emplace_back("Accept-Encoding", "gzip");
        HttpResponse r = Get(port(), "/metrics", headers);
        std::string body = r.body;
        if (r.Header("Content-Encoding") == "gzip" && !Gunzip(r.body, &body)) continue;
        const std::string& expected = (c + i) % 2 == 1 ? om_body_ : text_body_;
        if (r.status == 200 && body == expected) good.fetch_add(1);
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(good.load(), kClients * kScrapesEach);
  EXPECT_EQ(renders_.load(), kClients * kScrapesEach);
}

// A render that blocks ties up one worker; the other keeps accepting and answering.
TEST(HttpServerConcurrency, SlowScrapeDoesNotBlockOtherRequests) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  HttpHandlers handlers;
  handlers.render_metrics = [&](ExpositionFormat) {
    if (first.exchange(false)) {
      entered.set_value();
      released.wait();
    }
    return std::string("up 1.0\n");
  };
  HttpServerOptions options = EphemeralLoopback();
  options.threads = 2;
  std::unique_ptr<HttpServer> server = StartOrDie(options, handlers);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  std::thread slow([&] { EXPECT_EQ(Get(port, "/metrics").status, 200); });
  // Bounded so a broken server fails here instead of hanging; the handler is released either
  // way so Stop can join the workers.
  const bool blocked =
      entered.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (blocked) {
    EXPECT_EQ(Get(port, "/health").status, 200);
    EXPECT_EQ(Get(port, "/metrics").body, "up 1.0\n");
  }
  release.set_value();
  slow.join();
  EXPECT_TRUE(blocked) << "the first scrape never reached the handler";
}

}  // namespace
}  // namespace vmetrics
