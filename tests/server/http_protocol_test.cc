// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 framing rules the server enforces over real sockets: the Host header
// (RFC 9112 §3.2), request bodies of unknown length on routes (411), and
// `Expect: 100-continue` with a body past the route's limit (417, without the
// `100 Continue` that would invite the body).
// Each reply is read raw, interim responses included, so a `100 Continue` cannot go unseen.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "http_test_client.h"
#include "vmetrics/http_server.h"

namespace vmetrics {
namespace {

using http_test::ConnectTo;
using http_test::Exchange;
using http_test::HttpResponse;

constexpr size_t kRouteLimit = 1 << 20;

class HttpProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpHandlers handlers;
    handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
    HttpRoute route;
    route.method = "POST";
    route.path = "/submit";
    route.max_body_bytes = kRouteLimit;
    route.handler = [this](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
      calls_.fetch_add(1);
      exchange->Reply(200, "text/plain", std::to_string(request.body.size()));
    };
    route.error_reply = [](unsigned status, std::string_view message) {
      return HttpReply{status, "application/json",
                       R"({"status":)" + std::to_string(status) + R"(,"message":")" +
                           std::string(message) + R"("})"};
    };
    handlers.routes.push_back(std::move(route));
    HttpServerOptions options;
    options.port = 0;
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  uint16_t port() const { return server_->port(); }

  std::atomic<int> calls_{0};
  std::unique_ptr<HttpServer> server_;
};

// A connected socket that closes itself.
class Connection {
 public:
  explicit Connection(uint16_t port) : fd_(ConnectTo("127.0.0.1", port)) {}
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool ok() const { return fd_ >= 0; }

  void Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t sent = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (sent <= 0) return;
      data.remove_prefix(static_cast<size_t>(sent));
    }
  }

  // The next response head (status line and headers, up to the blank line), interim ones
  // included; "" when the connection ends or times out first (the client's 10 s bound).
  std::string ReadHead() {
    for (;;) {
      const size_t end = buffer_.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string head = buffer_.substr(0, end);
        buffer_.erase(0, end + 4);
        return head;
      }
      char chunk[4096];
      const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(got));
    }
  }

  // What arrived after the last head read, and everything until the server closes.
  std::string ReadToEnd() {
    char chunk[4096];
    for (;;) {
      const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) return std::move(buffer_);
      buffer_.append(chunk, static_cast<size_t>(got));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

std::string StatusLine(const std::string& head) { return head.substr(0, head.find("\r\n")); }

TEST_F(HttpProtocolTest, Http11WithoutHostIs400) {
  HttpResponse r = Exchange(port(), "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Exchange(port(), "GET /health HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(Exchange(port(), "POST /submit HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}").status, 400);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpProtocolTest, TwoHostLinesAre400WhateverTheVersion) {
  EXPECT_EQ(Exchange(port(), "GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").status, 400);
  EXPECT_EQ(Exchange(port(), "GET /metrics HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n").status, 400);
}

TEST_F(HttpProtocolTest, Http10MayGoWithoutHostAndHttp11WithOneIsServed) {
  HttpResponse old = Exchange(port(), "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.status, 200);
  EXPECT_EQ(old.body, "up 1.0\n");
  EXPECT_EQ(Exchange(port(), http_test::Request("GET", "/metrics")).status, 200);
}

// libmicrohttpd answered a chunk line longer than its read buffer with its own 500; a route
// now refuses any Transfer-Encoding body before reading it.
TEST_F(HttpProtocolTest, HundredKilobyteChunkExtensionIs4xx) {
  Connection c(port());
  ASSERT_TRUE(c.ok());
  c.Send("POST /submit HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;" +
         std::string(100 * 1024, 'a') + "\r\nhello\r\n0\r\n\r\n");
  const std::string head = c.ReadHead();
  EXPECT_EQ(StatusLine(head), "HTTP/1.1 411 Length Required") << head;
  EXPECT_NE(c.ReadToEnd().find(R"("status":411)"), std::string::npos)
      << "the 411 is not in the route's words";
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpProtocolTest, ChunkedBodyOnARouteIs411AndContentLengthStillWorks) {
  Connection c(port());
  ASSERT_TRUE(c.ok());
  c.Send("POST /submit HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(StatusLine(c.ReadHead()), "HTTP/1.1 411 Length Required");
  HttpResponse r = Exchange(port(),
                            "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                            "Connection: close\r\n\r\n{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "2");
  EXPECT_EQ(calls_.load(), 1);
}

// A gigabyte announced with `Expect: 100-continue`: 417 at once, never `100 Continue`.
TEST_F(HttpProtocolTest, ExpectContinuePastTheRoutesLimitIs417WithoutContinue) {
  Connection c(port());
  ASSERT_TRUE(c.ok());
  c.Send(
      "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n"
      "Expect: 100-continue\r\n\r\n");
  const std::string head = c.ReadHead();
  EXPECT_EQ(StatusLine(head), "HTTP/1.1 417 Expectation Failed") << head;
  EXPECT_NE(c.ReadToEnd().find("request body of 1000000000 bytes is larger than 1048576 bytes"),
            std::string::npos);
  EXPECT_EQ(calls_.load(), 0);
}

// Within the limit the expectation is met as before: `100 Continue`, then the body, then 200.
TEST_F(HttpProtocolTest, ExpectContinueWithinTheLimitGetsContinueThenTheReply) {
  Connection c(port());
  ASSERT_TRUE(c.ok());
  c.Send(
      "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
      "Connection: close\r\n\r\n");
  EXPECT_EQ(StatusLine(c.ReadHead()), "HTTP/1.1 100 Continue");
  c.Send("hello");
  EXPECT_EQ(StatusLine(c.ReadHead()), "HTTP/1.1 200 OK");
  EXPECT_EQ(c.ReadToEnd(), "5");
  EXPECT_EQ(calls_.load(), 1);
}

}  // namespace
}  // namespace vmetrics
