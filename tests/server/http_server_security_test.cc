// SPDX-License-Identifier: Apache-2.0
// HttpServer with a web config, end to end over loopback: basic authentication on every route,
// extra headers, TLS (GnuTLS client in-process, and curl when installed), TLS versions, and
// Start refusing bad configs. Certificates and bcrypt hashes (cost 4) are made at test time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "security_test_util.h"
#include "vmetrics/http_server.h"
#include "vmetrics/web_config.h"

namespace vmetrics {
namespace {

using http_test::Exchange;
using http_test::ExchangeInTurn;
using http_test::Get;
using http_test::HttpResponse;
using http_test::Request;
using security_test::BasicAuthorization;
using security_test::BcryptHash;
using security_test::MakeSelfSignedCertificate;
using security_test::ScratchDirectory;
using security_test::TestCertificate;
using security_test::TlsClientOptions;
using security_test::TlsExchange;
using security_test::TlsExchangeResult;

constexpr char kUser[] = "prometheus";
constexpr char kPassword[] = "correct horse battery staple";
constexpr char kChallenge[] = "Basic realm=\"vmetrics\"";
constexpr char kBody[] = "vllm:num_requests_running{engine=\"0\"} 1.0\n";

HttpHandlers CountingHandlers(std::atomic<int>* renders) {
  HttpHandlers handlers;
  handlers.render_metrics = [renders](ExpositionFormat) {
    renders->fetch_add(1);
    return std::string(kBody);
  };
  handlers.health = [] { return HealthReport{true, "ok"}; };
  return handlers;
}

std::unique_ptr<HttpServer> StartOrDie(HttpServerOptions options, HttpHandlers handlers) {
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

HttpServerOptions WithWebConfig(WebConfig config) {
  HttpServerOptions options;
  options.port = 0;
  options.web_config = std::move(config);
  return options;
}

std::vector<std::pair<std::string, std::string>> Credentials(std::string_view user,
                                                             std::string_view password) {
  return {{"Authorization", BasicAuthorization(user, password)}};
}

// ---- basic authentication over plain HTTP ----

class BasicAuthServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WebConfig config;
    config.basic_auth_users[kUser] = BcryptHash(kPassword);
    server_ = StartOrDie(WithWebConfig(std::move(config)), CountingHandlers(&renders_));
    ASSERT_NE(server_, nullptr);
  }
  uint16_t port() const { return server_->port(); }

  std::atomic<int> renders_{0};
  std::unique_ptr<HttpServer> server_;
};

void ExpectChallenge(const HttpResponse& r, const std::string& what) {
  EXPECT_EQ(r.status, 401) << what;
  EXPECT_EQ(r.Header("WWW-Authenticate"), kChallenge) << what;
  EXPECT_EQ(r.body, "Unauthorized") << what;
}

TEST_F(BasicAuthServerTest, NoCredentialsIs401OnEveryPathAndMethod) {
  for (const char* target : {"/metrics", "/health", "/metrics/", "/nope", "/"}) {
    ExpectChallenge(Get(port(), target), std::string("GET ") + target);
  }
  // Before 404 and 405: without credentials no path is told apart from another.
  ExpectChallenge(Exchange(port(), Request("POST", "/metrics")), "POST /metrics");
  ExpectChallenge(Exchange(port(), Request("DELETE", "/v1/models")), "DELETE /v1/models");
  http_test::ExchangeOptions head;
  head.head = true;
  HttpResponse r = Exchange(port(), Request("HEAD", "/metrics"), head);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.Header("WWW-Authenticate"), kChallenge);
  EXPECT_EQ(renders_.load(), 0);
}

TEST_F(BasicAuthServerTest, WrongCredentialsAre401) {
  ExpectChallenge(Get(port(), "/metrics", Credentials(kUser, "wrong")), "wrong password");
  ExpectChallenge(Get(port(), "/health", Credentials(kUser, "")), "empty password");
  ExpectChallenge(Get(port(), "/metrics", Credentials("root", kPassword)), "unknown user");
  ExpectChallenge(Get(port(), "/metrics", {{"Authorization", "Bearer abc"}}), "bearer token");
  ExpectChallenge(Get(port(), "/metrics", {{"Authorization", "Basic !!!!"}}), "bad base64");
  ExpectChallenge(Get(port(), "/metrics", {{"Authorization", ""}}), "empty header");
  EXPECT_EQ(renders_.load(), 0);
}

TEST_F(BasicAuthServerTest, TwoAuthorizationHeadersAre401EvenIfOneIsRight) {
  std::vector<std::pair<std::string, std::string>> headers = Credentials(kUser, kPassword);
  headers.emplace_back("Authorization", BasicAuthorization(kUser, "wrong"));
  ExpectChallenge(Get(port(), "/metrics", headers), "right then wrong");
  std::reverse(headers.begin(), headers.end());
  ExpectChallenge(Get(port(), "/metrics", headers), "wrong then right");
}

TEST_F(BasicAuthServerTest, RightCredentialsAre200) {
  HttpResponse metrics = Get(port(), "/metrics", Credentials(kUser, kPassword));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body, kBody);
  EXPECT_FALSE(metrics.HasHeader("WWW-Authenticate"));
  HttpResponse health = Get(port(), "/health", Credentials(kUser, kPassword));
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  // With credentials, the usual answers come back.
  EXPECT_EQ(Get(port(), "/nope", Credentials(kUser, kPassword)).status, 404);
  EXPECT_EQ(Exchange(port(), Request("POST", "/metrics", Credentials(kUser, kPassword))).status,
            405);
  EXPECT_EQ(renders_.load(), 1);
}

// Prometheus keeps one connection and sends its credentials with every scrape.
TEST_F(BasicAuthServerTest, KeepAliveScrapesWithCredentials) {
  const auto credentials = Credentials(kUser, kPassword);
  std::vector<HttpResponse> replies =
      ExchangeInTurn(port(), {Request("GET", "/metrics", credentials, /*close=*/false),
                              Request("GET", "/metrics", credentials, /*close=*/false),
                              Request("GET", "/health", credentials)});
  ASSERT_EQ(replies.size(), 3u);
  for (const HttpResponse& r : replies) EXPECT_EQ(r.status, 200);
  EXPECT_EQ(renders_.load(), 2);
}

TEST_F(BasicAuthServerTest, ConcurrentScrapersWithAndWithoutCredentials) {
  constexpr int kClients = 8;
  constexpr int kEach = 10;
  std::atomic<int> right{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kEach; ++i) {
        const bool good = (c + i) % 3 != 0;
        HttpResponse r = Get(port(), "/metrics", Credentials(kUser, good ? kPassword : "guess"));
        if (r.status == (good ? 200 : 401)) right.fetch_add(1);
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(right.load(), kClients * kEach);
}

// ---- wrong-password floods ----

// One worker thread, and a user whose hash costs about a second of bcrypt: before bcrypt
// moved to its own thread, a single wrong guess froze every connection of the worker for that
// second. Scrapes with cached credentials must now be answered while the guess is checked.
TEST(BasicAuthFlood, WrongPasswordBeingCheckedDoesNotStallCachedScrapes) {
  WebConfig config;
  config.basic_auth_users["fast"] = BcryptHash(kPassword);
  config.basic_auth_users["slow"] = BcryptHash(kPassword, "$2b$", 13);
  HttpServerOptions options = WithWebConfig(std::move(config));
  options.threads = 1;
  std::atomic<int> renders{0};
  std::unique_ptr<HttpServer> server = StartOrDie(options, CountingHandlers(&renders));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  const auto fast = Credentials("fast", kPassword);
  ASSERT_EQ(Get(port, "/metrics", fast).status, 200);  // now cached

  std::future<HttpResponse> guess = std::async(
      std::launch::async, [port] { return Get(port, "/metrics", Credentials("slow", "guess")); });
  constexpr int kMaxScrapes = 2000;
  int scrapes = 0;
  auto slowest = std::chrono::steady_clock::duration::zero();
  for (int i = 0;
       i < kMaxScrapes && guess.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
       ++i) {
    const auto begin = std::chrono::steady_clock::now();
    EXPECT_EQ(Get(port, "/metrics", fast).status, 200);
    slowest = std::max(slowest, std::chrono::steady_clock::now() - begin);
    ++scrapes;
  }
  ASSERT_EQ(guess.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ExpectChallenge(guess.get(), "the guess");
  EXPECT_GE(scrapes, 10) << "the guess was checked before the scrapes ran";
  // The guess alone takes about a second; a scrape that waited for it would show that.
  EXPECT_LT(slowest, std::chrono::milliseconds(500))
      << "slowest scrape: "
      << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count() << " ms";
}

// With room for one waiting check, of four guesses sent together (each check takes a quarter
// of a second or more) at least one finds the queue full and is told to come back.
TEST(BasicAuthFlood, FullVerificationQueueIs429WithRetryAfter) {
  WebConfig config;
  config.basic_auth_users["slow"] = BcryptHash(kPassword, "$2b$", 12);
  HttpServerOptions options = WithWebConfig(std::move(config));
  options.max_pending_auth_checks = 1;
  std::atomic<int> renders{0};
  std::unique_ptr<HttpServer> server = StartOrDie(options, CountingHandlers(&renders));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  std::vector<std::future<HttpResponse>> guesses;
  for (int i = 0; i < 4; ++i) {
    guesses.push_back(std::async(std::launch::async, [port] {
      return Get(port, "/metrics", Credentials("slow", "guess"));
    }));
  }
  int too_many = 0;
  for (std::future<HttpResponse>& g : guesses) {
    ASSERT_EQ(g.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    HttpResponse r = g.get();
    EXPECT_TRUE(r.status == 401 || r.status == 429) << r.status;
    if (r.status == 429) {
      ++too_many;
      EXPECT_EQ(r.Header("Retry-After"), "1");
      EXPECT_FALSE(r.HasHeader("WWW-Authenticate"));
    }
  }
  EXPECT_GE(too_many, 1);
  // The right password still gets in once there is room.
  EXPECT_EQ(Get(port, "/health", Credentials("slow", kPassword)).status, 200);
  EXPECT_EQ(renders.load(), 0);
}

// Stop with checks running and waiting: every suspended connection is resumed and closed, and
// Stop returns once the running bcrypt ends.
TEST(BasicAuthFlood, StopWithChecksWaitingReturns) {
  WebConfig config;
  config.basic_auth_users["slow"] = BcryptHash(kPassword, "$2b$", 12);
  std::atomic<int> renders{0};
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(std::move(config)), CountingHandlers(&renders));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  std::vector<std::future<HttpResponse>> guesses;
  for (int i = 0; i < 4; ++i) {
    guesses.push_back(std::async(std::launch::async, [port] {
      return Get(port, "/metrics", Credentials("slow", "guess"));
    }));
  }
  // Once the first guess is answered the others are queued or done; stop with them waiting.
  ASSERT_EQ(guesses[0].wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const auto begin = std::chrono::steady_clock::now();
  server->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  for (std::future<HttpResponse>& g : guesses) {
    ASSERT_EQ(g.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    const HttpResponse r = g.get();
    // Answered before Stop (401), cancelled by it (503), or closed by it (0).
    EXPECT_TRUE(r.status == 401 || r.status == 503 || r.status == 0) << r.status;
  }
  EXPECT_EQ(renders.load(), 0);
}

// A wrong-password flood from 24 addresses, each guessing anew as soon as it is answered (a
// guess repeated would be answered from the failure cache), keeps the queue of bcrypt checks
// full of one-job lines. Meanwhile valid users log in for the first time, one after the other,
// each from an address of its own: every login gets 200 within kFirstLoginBound. With lines
// alone (no memory of denials), most of them got 429 at once.
TEST(BasicAuthFlood, FirstLoginsGetInWhileManyAddressesGuess) {
  constexpr int kAttackers = 24;
  constexpr int kUsers = 6;
  // Cost 8: about 15 ms of bcrypt here, slow enough that the guesses keep the queue full.
  constexpr unsigned long kCost = 8;
  WebConfig config;
  const auto hash_begin = std::chrono::steady_clock::now();
  config.basic_auth_users["target"] = BcryptHash(kPassword, "$2b$", kCost);
  const auto bcrypt_time = std::chrono::steady_clock::now() - hash_begin;
  for (int u = 0; u < kUsers; ++u) {
    config.basic_auth_users["user-" + std::to_string(u)] =
        BcryptHash(kPassword + std::to_string(u), "$2b$", kCost);
  }
  std::atomic<int> renders{0};
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(std::move(config)), CountingHandlers(&renders));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  // The attackers: 127.0.0.2 ... 127.0.0.25, one connection at a time each.
  std::atomic<bool> stop{false};
  std::vector<std::atomic<int>> denied(kAttackers);
  std::atomic<int> refused{0};  // 429s
  std::atomic<int> unexpected{0};
  std::vector<std::thread> attackers;
  for (int a = 0; a < kAttackers; ++a) {
    attackers.emplace_back([&, a] {
      http_test::ExchangeOptions from;
      from.source = "127.0.0." + std::to_string(2 + a);
      for (int guess = 0; !stop.load(); ++guess) {
        const HttpResponse r = Exchange(
            port,
            Request(
                "GET", "/metrics",
                Credentials("target", "guess-" + std::to_string(a) + "-" + std::to_string(guess))),
            from);
        if (r.status == 401) {
          denied[a].fetch_add(1);
        } else if (r.status == 429) {
          refused.fetch_add(1);
        } else {
          unexpected.fetch_add(1);
        }
      }
    });
  }
  struct Stop {
    std::atomic<bool>* stop;
    std::vector<std::thread>* threads;
    ~Stop() {
      stop->store(true);
      for (std::thread& t : *threads) t.join();
    }
  } stop_attackers{&stop, &attackers};

  // The flood is on once every attacking address has been denied (its record is bad).
  const auto flood_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto all_denied = [&] {
    return std::all_of(denied.begin(), denied.end(),
                       [](const std::atomic<int>& d) { return d.load() > 0; });
  };
  while (!all_denied() && std::chrono::steady_clock::now() < flood_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling with a deadline
  }
  ASSERT_TRUE(all_denied()) << "the flood never reached every address";

  // A login waits for the check running, then its own: a few bcrypts, and the machine's two
  // cores are shared with 24 attacking threads and the server's workers.
  const auto first_login_bound = std::chrono::seconds(2);
  std::vector<long long> waits_ms;
  for (int u = 0; u < kUsers; ++u) {
    http_test::ExchangeOptions from;
    from.source = "127.0.0." + std::to_string(30 + u);
    const int refused_before = refused.load();
    const auto begin = std::chrono::steady_clock::now();
    const HttpResponse r =
        Exchange(port,
                 Request("GET", "/metrics",
                         Credentials("user-" + std::to_string(u), kPassword + std::to_string(u))),
                 from);
    const auto waited = std::chrono::steady_clock::now() - begin;
    waits_ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count());
    EXPECT_EQ(r.status, 200) << "user-" << u << "'s first login";
    EXPECT_LT(waited, first_login_bound) << "user-" << u;
    EXPECT_GT(refused.load(), refused_before) << "the queue was not full: no flood to test";
  }
  stop.store(true);
  EXPECT_EQ(unexpected.load(), 0);
  std::string waits;
  for (long long w : waits_ms) waits += " " + std::to_string(w);
  std::printf("bcrypt at cost %lu: %lld ms; first logins took (ms):%s; %d guesses refused 429\n",
              kCost,
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(bcrypt_time).count()),
              waits.c_str(), refused.load());
}

// ---- extra headers ----

TEST(WebConfigHeaders, AddedToEveryReplyTheServerBuilds) {
  WebConfig config;
  config.basic_auth_users[kUser] = BcryptHash(kPassword);
  config.headers = {{"X-Frame-Options", "deny"}, {"Strict-Transport-Security", "max-age=31536000"}};
  std::atomic<int> renders{0};
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(std::move(config)), CountingHandlers(&renders));
  ASSERT_NE(server, nullptr);
  const auto credentials = Credentials(kUser, kPassword);
  const std::vector<std::pair<std::string, HttpResponse>> replies = {
      {"200", Get(server->port(), "/metrics", credentials)},
      {"401", Get(server->port(), "/metrics")},
      {"404", Get(server->port(), "/nope", credentials)},
      {"405", Exchange(server->port(), Request("PUT", "/health", credentials))},
  };
  for (const auto& [what, r] : replies) {
    EXPECT_EQ(std::to_string(r.status), what);
    EXPECT_EQ(r.Header("X-Frame-Options"), "deny") << what;
    EXPECT_EQ(r.Header("Strict-Transport-Security"), "max-age=31536000") << what;
  }
}

// ---- TLS ----

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override { cert_ = MakeSelfSignedCertificate(); }

  WebConfig TlsConfig(TlsVersion min = TlsVersion::kTls12, TlsVersion max = TlsVersion::kTls13) {
    WebConfig config;
    config.tls =
        TlsServerConfig{"server.crt", "server.key", cert_.cert_pem, cert_.key_pem, min, max};
    return config;
  }

  TlsClientOptions Trusting() const {
    TlsClientOptions options;
    options.trusted_pem = cert_.cert_pem;
    return options;
  }

  TestCertificate cert_;
  std::atomic<int> renders_{0};
};

TEST_F(TlsServerTest, ScrapeOverTlsVerifiesTheCertificateAndGets200) {
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(TlsConfig()), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsExchangeResult r = TlsExchange(server->port(), Request("GET", "/metrics"), Trusting());
  ASSERT_TRUE(r.handshake_ok) << r.error;
  EXPECT_EQ(r.protocol, "TLS1.3");
  EXPECT_EQ(r.response.status, 200);
  EXPECT_EQ(r.response.body, kBody);
  TlsExchangeResult health = TlsExchange(server->port(), Request("GET", "/health"), Trusting());
  ASSERT_TRUE(health.handshake_ok) << health.error;
  EXPECT_EQ(health.response.status, 200);
}

TEST_F(TlsServerTest, ClientThatTrustsAnotherCertificateRefusesTheHandshake) {
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(TlsConfig()), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsClientOptions other;
  other.trusted_pem = MakeSelfSignedCertificate().cert_pem;
  TlsExchangeResult r = TlsExchange(server->port(), Request("GET", "/metrics"), other);
  EXPECT_TRUE(r.connected);
  EXPECT_FALSE(r.handshake_ok);
  EXPECT_EQ(renders_.load(), 0);
  // The server carries on.
  EXPECT_TRUE(TlsExchange(server->port(), Request("GET", "/metrics"), Trusting()).handshake_ok);
}

TEST_F(TlsServerTest, PlainHttpToTheTlsPortGetsNoHttpAnswer) {
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(TlsConfig()), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  HttpResponse r = Get(server->port(), "/metrics");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(renders_.load(), 0);
  TlsExchangeResult after = TlsExchange(server->port(), Request("GET", "/metrics"), Trusting());
  EXPECT_EQ(after.response.status, 200) << after.error;
}

TEST_F(TlsServerTest, MinVersionTls13RefusesATls12Client) {
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(TlsConfig(TlsVersion::kTls13, TlsVersion::kTls13)),
                 CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsClientOptions tls12 = Trusting();
  tls12.priorities = "NORMAL:-VERS-ALL:+VERS-TLS1.2";
  TlsExchangeResult refused = TlsExchange(server->port(), Request("GET", "/metrics"), tls12);
  EXPECT_FALSE(refused.handshake_ok);
  TlsExchangeResult accepted = TlsExchange(server->port(), Request("GET", "/metrics"), Trusting());
  ASSERT_TRUE(accepted.handshake_ok) << accepted.error;
  EXPECT_EQ(accepted.protocol, "TLS1.3");
}

TEST_F(TlsServerTest, MaxVersionTls12NegotiatesTls12) {
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(TlsConfig(TlsVersion::kTls12, TlsVersion::kTls12)),
                 CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsExchangeResult r = TlsExchange(server->port(), Request("GET", "/metrics"), Trusting());
  ASSERT_TRUE(r.handshake_ok) << r.error;
  EXPECT_EQ(r.protocol, "TLS1.2");
  EXPECT_EQ(r.response.status, 200);
}

TEST_F(TlsServerTest, OldProtocolsAreRefusedByDefault) {
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(TlsConfig()), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsClientOptions tls11 = Trusting();
  tls11.priorities = "NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0";
  EXPECT_FALSE(TlsExchange(server->port(), Request("GET", "/metrics"), tls11).handshake_ok);
}

TEST_F(TlsServerTest, TlsAndBasicAuthTogether) {
  WebConfig config = TlsConfig();
  config.basic_auth_users[kUser] = BcryptHash(kPassword);
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(std::move(config)), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsExchangeResult anonymous = TlsExchange(server->port(), Request("GET", "/metrics"), Trusting());
  ASSERT_TRUE(anonymous.handshake_ok) << anonymous.error;
  EXPECT_EQ(anonymous.response.status, 401);
  EXPECT_EQ(anonymous.response.Header("WWW-Authenticate"), kChallenge);
  TlsExchangeResult wrong = TlsExchange(
      server->port(), Request("GET", "/health", Credentials(kUser, "nope")), Trusting());
  EXPECT_EQ(wrong.response.status, 401);
  TlsExchangeResult right = TlsExchange(
      server->port(), Request("GET", "/metrics", Credentials(kUser, kPassword)), Trusting());
  EXPECT_EQ(right.response.status, 200);
  EXPECT_EQ(right.response.body, kBody);
  EXPECT_EQ(renders_.load(), 1);
}

// What `vmetrics serve --web-config-file` will do: load the file, start, scrape.
TEST_F(TlsServerTest, ServesWhatLoadWebConfigReads) {
  ScratchDirectory dir;
  dir.WriteFile("server.crt", cert_.cert_pem);
  dir.WriteFile("server.key", cert_.key_pem);
  const std::string path =
      dir.WriteFile("web.yml",
                    "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                    "basic_auth_users:\n  " +
                        std::string(kUser) + ": " + BcryptHash(kPassword) + "\n");
  Result<WebConfig> config = LoadWebConfig(path);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(std::move(*config)), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  TlsExchangeResult r = TlsExchange(
      server->port(), Request("GET", "/metrics", Credentials(kUser, kPassword)), Trusting());
  ASSERT_TRUE(r.handshake_ok) << r.error;
  EXPECT_EQ(r.response.status, 200);
}

// Another TLS stack (curl, built on OpenSSL in Debian) against the server, when installed.
TEST_F(TlsServerTest, CurlScrapesOverTlsWithBasicAuth) {
  if (std::system("command -v curl >/dev/null 2>&1") != 0) GTEST_SKIP() << "curl not installed";
  WebConfig config = TlsConfig();
  config.basic_auth_users[kUser] = BcryptHash(kPassword);
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(std::move(config)), CountingHandlers(&renders_));
  ASSERT_NE(server, nullptr);
  ScratchDirectory dir;
  const std::string ca = dir.WriteFile("ca.pem", cert_.cert_pem);
  auto curl = [&](const std::string& auth) {
    const std::string command =
        "curl -sS --max-time 10 --cacert " + ca + auth +
        " -o /dev/null -w '%{http_code}' https://localhost:" + std::to_string(server->port()) +
        "/metrics 2>&1";
    std::string out;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buffer[256];
      while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
      pclose(pipe);
    }
    return out;
  };
  EXPECT_EQ(curl(""), "401");
  EXPECT_EQ(curl(" -u 'prometheus:correct horse battery staple'"), "200");
}

// ---- Start refuses configs it cannot serve ----

TEST(WebConfigStart, InvalidConfigsAreRefusedBeforeBinding) {
  std::atomic<int> renders{0};
  WebConfig plaintext;
  plaintext.basic_auth_users[kUser] = kPassword;
  Result<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(WithWebConfig(plaintext), CountingHandlers(&renders));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.status().message().rfind(
                "HttpServerOptions::web_config: basic_auth_users.prometheus: not a bcrypt hash", 0),
            0u)
      << server.status().message();

  const TestCertificate a = MakeSelfSignedCertificate();
  const TestCertificate b = MakeSelfSignedCertificate();
  WebConfig mismatched;
  mismatched.tls = TlsServerConfig{"a.crt", "b.key", a.cert_pem, b.key_pem};
  server = HttpServer::Start(WithWebConfig(mismatched), CountingHandlers(&renders));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("is not the private key"), std::string::npos)
      << server.status().message();
}

TEST(WebConfigStart, EmptyWebConfigServesPlainHttpToEveryone) {
  std::atomic<int> renders{0};
  std::unique_ptr<HttpServer> server =
      StartOrDie(WithWebConfig(WebConfig{}), CountingHandlers(&renders));
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
}

}  // namespace
}  // namespace vmetrics
