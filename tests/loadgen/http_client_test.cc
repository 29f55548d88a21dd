// SPDX-License-Identifier: Apache-2.0
// HttpClient (tools/loadgen/http_client.h, libcurl) against vmetrics' own HTTP server
// (libmicrohttpd) on loopback: plain requests, a stream handed over piece by piece and hung up
// on, and https with a CA file and basic authentication, as `vmetrics bench-serve --ca-file
// --user --password` uses them. Two peers neither written here: libcurl and libmicrohttpd.
#include "loadgen/http_client.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "security_test_util.h"
#include "vmetrics/http_server.h"
#include "vmetrics/web_config.h"

namespace vmetrics::loadgen {
namespace {

using security_test::BcryptHash;
using security_test::MakeSelfSignedCertificate;
using security_test::ScratchDirectory;
using security_test::TestCertificate;

constexpr char kUser[] = "bench";
constexpr char kPassword[] = "correct horse battery staple";

HttpRoute Echo() {
  HttpRoute route;
  route.method = "POST";
  route.path = "/echo";
  route.handler = [](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    exchange->Reply(200, "application/json", std::move(request.body));
  };
  return route;
}

// Three server-sent events, then the end.
HttpRoute Stream() {
  HttpRoute route;
  route.method = "POST";
  route.path = "/stream";
  route.handler = [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->StartStream("text/event-stream");
    for (int i = 0; i < 3; ++i) exchange->Write("data: " + std::to_string(i) + "\n\n");
    exchange->End();
  };
  return route;
}

std::unique_ptr<HttpServer> StartServer(std::optional<WebConfig> web_config = std::nullopt) {
  HttpServerOptions options;
  options.port = 0;
  options.web_config = std::move(web_config);
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  handlers.routes = {Echo(), Stream()};
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

std::string Url(const std::string& scheme, uint16_t port, const std::string& path) {
  return scheme + "://127.0.0.1:" + std::to_string(port) + path;
}

TEST(HttpClient, PostsAndGetsOverPlainHttpOnOneConnection) {
  std::unique_ptr<HttpServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  HttpClient client;
  for (int i = 0; i < 3; ++i) {
    const std::string body = R"({"prompt":[)" + std::to_string(i) + "]}";
    HttpClientResponse r = client.Post(Url("http", server->port(), "/echo"), body);
    EXPECT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.body, body);
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.error, "");
  }
  HttpClientResponse metrics = client.Get(Url("http", server->port(), "/metrics"));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body, "up 1.0\n");
  // An HTTP error is a response, not a failure of the client.
  HttpClientResponse missing = client.Get(Url("http", server->port(), "/nope"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"detail":"Not Found"})");
  EXPECT_EQ(missing.error, "");
  HttpClientResponse wrong = HttpGet(Url("http", server->port(), "/echo"));
  EXPECT_EQ(wrong.status, 405);
}

TEST(HttpClient, StreamArrivesInPiecesAndTheCallerMayHangUp) {
  std::unique_ptr<HttpServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::string stream;
  HttpClientResponse whole =
      HttpPost(Url("http", server->port(), "/stream"), "{}", [&](std::string_view piece) {
        stream.append(piece);
        return true;
      });
  EXPECT_EQ(whole.status, 200) << whole.error;
  EXPECT_EQ(whole.content_type, "text/event-stream");
  EXPECT_EQ(stream, "data: 0\n\ndata: 1\n\ndata: 2\n\n") << "chunked framing must be removed";
  EXPECT_EQ(whole.body, "") << "on_body consumed the body";
  EXPECT_FALSE(whole.hung_up);

  int pieces = 0;
  HttpClientResponse cut = HttpPost(Url("http", server->port(), "/stream"), "{}",
                                    [&](std::string_view) { return ++pieces < 1; });
  EXPECT_EQ(cut.status, 200);
  EXPECT_TRUE(cut.hung_up);
  EXPECT_EQ(cut.error, "") << "a hang-up asked for is not an error";
  EXPECT_EQ(pieces, 1);
}

TEST(HttpClient, NothingListeningIsAnErrorWithoutAStatus) {
  uint16_t port = 0;
  {
    std::unique_ptr<HttpServer> server = StartServer();
    ASSERT_NE(server, nullptr);
    port = server->port();
  }
  HttpClientResponse r = HttpGet(Url("http", port, "/metrics"));
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error, "");
}

class HttpClientTls : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = MakeSelfSignedCertificate();
    ca_file_ = scratch_.WriteFile("ca.pem", cert_.cert_pem);
    WebConfig config;
    config.tls = TlsServerConfig{"server.crt",  "server.key",       cert_.cert_pem,
                                 cert_.key_pem, TlsVersion::kTls12, TlsVersion::kTls13};
    config.basic_auth_users[kUser] = BcryptHash(kPassword);
    server_ = StartServer(std::move(config));
    ASSERT_NE(server_, nullptr);
  }

  HttpClientOptions Trusting() const {
    HttpClientOptions o;
    o.ca_file = ca_file_;
    o.user = kUser;
    o.password = kPassword;
    return o;
  }

  TestCertificate cert_;
  ScratchDirectory scratch_;
  std::string ca_file_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpClientTls, HttpsWithTheCaFileAndCredentialsIsServed) {
  HttpClient client(Trusting());
  const std::string body = R"({"prompt":[1,2,3]})";
  for (int i = 0; i < 2; ++i) {
    HttpClientResponse r = client.Post(Url("https", server_->port(), "/echo"), body);
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.body, body);
  }
  std::string stream;
  HttpClientResponse s =
      client.Post(Url("https", server_->port(), "/stream"), "{}", [&](std::string_view piece) {
        stream.append(piece);
        return true;
      });
  EXPECT_EQ(s.status, 200) << s.error;
  EXPECT_EQ(stream, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
}

TEST_F(HttpClientTls, CredentialsAreCheckedByTheServer) {
  HttpClientOptions wrong = Trusting();
  wrong.password = "wrong";
  EXPECT_EQ(HttpPost(Url("https", server_->port(), "/echo"), "{}", nullptr, wrong).status, 401);
  HttpClientOptions none = Trusting();
  none.user.clear();
  EXPECT_EQ(HttpGet(Url("https", server_->port(), "/metrics"), none).status, 401);
}

TEST_F(HttpClientTls, ServerNotSignedByTheCaFileIsRefused) {
  HttpClientOptions other = Trusting();
  other.ca_file = scratch_.WriteFile("other.pem", MakeSelfSignedCertificate().cert_pem);
  HttpClientResponse r = HttpGet(Url("https", server_->port(), "/metrics"), other);
  EXPECT_EQ(r.status, 0) << "no HTTP exchange with an unverified server";
  EXPECT_NE(r.error, "");
  // Plain HTTP to the TLS port gets no HTTP answer either.
  EXPECT_EQ(HttpGet(Url("http", server_->port(), "/metrics"), Trusting()).status, 0);
}

TEST(CheckHttpUrl, HttpAndHttpsWithAHostOnly) {
  EXPECT_TRUE(CheckHttpUrl("http://127.0.0.1:8000/v1/completions").ok());
  EXPECT_TRUE(CheckHttpUrl("https://frontend.example:443/v1/completions").ok());
  EXPECT_TRUE(CheckHttpUrl("http://[::1]:8000/").ok());
  for (const char* bad : {"ftp://127.0.0.1/x", "127.0.0.1:8000/v1/completions", "http://",
                          "not a url", "file:///etc/passwd"}) {
    const Status s = CheckHttpUrl(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace vmetrics::loadgen
