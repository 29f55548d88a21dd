// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 framing rules the server enforces over real sockets: the Host header
// (RFC 9112 §3.2), request bodies of unknown length on routes (411),
// `Expect: 100-continue` with a body past the route's limit (417, without the
// `100 Continue` that would invite the body), and heads that could frame a request two ways:
// Content-Length repeated or malformed, obs-folded lines, control bytes in the target (one
// 400, the connection closed).
// Each reply is read raw, interim responses included, so a `100 Continue` cannot go unseen.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

  // Everything until the server closes, and whether it did (false: the client's 10 s bound
  // ran out or the read failed).
  std::string ReadUntilClosed(bool* closed) {
    char chunk[4096];
    for (;;) {
      const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) {
        *closed = got == 0 || errno == ECONNRESET;
        return std::move(buffer_);
      }
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

// Sends `raw` on a new connection and reads until the server closes. Each head here is followed
// by a complete second request, so a server that read the first one's framing wrongly would
// answer twice: the reply must be one 400 (one status line in all the bytes that came back),
// and the connection closed.
void ExpectOne400AndClose(uint16_t port, const std::string& raw) {
  Connection c(port);
  ASSERT_TRUE(c.ok());
  c.Send(raw + "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  bool closed = false;
  const std::string reply = c.ReadUntilClosed(&closed);
  const std::string what = "request " + raw + "\nreply " + reply;
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 ", 0), 0u) << what;
  size_t status_lines = 0;
  for (size_t at = reply.find("HTTP/1."); at != std::string::npos;
       at = reply.find("HTTP/1.", at + 1)) {
    ++status_lines;
  }
  EXPECT_EQ(status_lines, 1u) << what;
  EXPECT_TRUE(closed) << what;
}

// RFC 9112 §6.3: two Content-Length lines, equal or not, or one beside Transfer-Encoding, are
// refused; libmicrohttpd read the first and took the rest of the body for the next request.
TEST_F(HttpProtocolTest, RepeatedContentLengthIsOne400AndTheConnectionCloses) {
  for (const std::string& lengths :
       {std::string("Content-Length: 0\r\nContent-Length: 31\r\n"),
        std::string("Content-Length: 31\r\nContent-Length: 0\r\n"),
        std::string("Content-Length: 2\r\nContent-Length: 2\r\n"),
        std::string("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n")}) {
    ExpectOne400AndClose(port(), "POST /submit HTTP/1.1\r\nHost: x\r\n" + lengths + "\r\n{}");
    ExpectOne400AndClose(port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n" + lengths + "\r\n{}");
  }
  EXPECT_EQ(calls_.load(), 0);
}

// A Content-Length that is not digits only: `+31`, `-1`, `0x20`, empty, a list. When it is the
// first Content-Length line and there is no Transfer-Encoding, libmicrohttpd 0.9.75 refuses it
// itself, before any application callback, with a 400 whose head it writes twice (its
// transmit_error_response builds the head, then the state it returns to builds it again), so
// the second copy sits inside the first reply's 138-byte body. No callback runs between the two
// and no option avoids the path, so vmetrics cannot remove that copy; what holds is the rest:
// one reply as framed by its Content-Length, the connection closed, the request after it never
// answered, no handler reached. Any later Content-Length line that is malformed is refused by
// vmetrics with one 400.
TEST_F(HttpProtocolTest, MalformedContentLengthIsRefusedAndTheConnectionCloses) {
  for (const char* length : {"+31", "-1", "0x20", "", "2, 2", "1 1", "2a"}) {
    for (const char* target : {"POST /submit", "GET /metrics"}) {
      // Second line malformed: vmetrics' refusal, one status line.
      ExpectOne400AndClose(port(), std::string(target) +
                                       " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                                       "Content-Length: " +
                                       length + "\r\n\r\n{}");
      // First line malformed: libmicrohttpd's refusal.
      Connection c(port());
      ASSERT_TRUE(c.ok());
      c.Send(std::string(target) + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + length +
             "\r\n\r\n{}GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
      bool closed = false;
      const std::string reply = c.ReadUntilClosed(&closed);
      const std::string what = std::string("Content-Length: ") + length + "\nreply " + reply;
      EXPECT_TRUE(closed) << what;
      const size_t head_end = reply.find("\r\n\r\n");
      ASSERT_NE(head_end, std::string::npos) << what;
      const std::string head = reply.substr(0, head_end + 4);
      EXPECT_EQ(head.rfind("HTTP/1.1 400 ", 0), 0u) << what;
      EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos) << what;
      const size_t declared = std::stoul(head.substr(head.find("Content-Length: ") + 16));
      // The reply's body as framed, and what follows it: never a second reply.
      ASSERT_GE(reply.size(), head.size() + declared) << what;
      const std::string body = reply.substr(head.size(), declared);
      const std::string after = reply.substr(head.size() + declared);
      EXPECT_EQ(after.find("HTTP/1."), std::string::npos) << what;
      EXPECT_EQ(reply.find(" 200 OK"), std::string::npos) << what;
      // libmicrohttpd's repeated head: a byte-for-byte copy at the start of the body. When a
      // libmicrohttpd without the repeat is in use, this fails: make these cases
      // ExpectOne400AndClose.
      EXPECT_EQ(body.rfind(head, 0), 0u) << what;
    }
  }
  EXPECT_EQ(calls_.load(), 0);
}

// RFC 9112 §5.2: a server must refuse a line folded onto the previous one (obs-fold), or
// replace the fold by spaces; libmicrohttpd 0.9.75 glued it to the name, so a folded
// Transfer-Encoding went unseen. A first header line that starts with a blank is no header.
TEST_F(HttpProtocolTest, ObsFoldedHeaderLinesAreOne400AndTheConnectionCloses) {
  ExpectOne400AndClose(port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n");
  ExpectOne400AndClose(port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\tfolded\r\n\r\n");
  ExpectOne400AndClose(port(),
                       "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                       "Transfer-Encoding:\r\n chunked\r\n\r\n{}");
  ExpectOne400AndClose(port(), "GET /metrics HTTP/1.1\r\n Host: x\r\n\r\n");
  ExpectOne400AndClose(port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nX A: 1\r\n\r\n");
  EXPECT_EQ(calls_.load(), 0);
  // Blanks around a value are not folds.
  EXPECT_EQ(Exchange(port(),
                     "GET /metrics HTTP/1.1\r\nHost:   x \r\nX-A:\t1\r\nX-B:\r\n"
                     "Connection: close\r\n\r\n")
                .status,
            200);
}

// Control bytes in the target, sent raw or percent-encoded: libmicrohttpd decodes the path into
// a C string, so "/submit%00.png" reached the handler of "/submit".
TEST_F(HttpProtocolTest, ControlBytesInTheTargetAreOne400AndTheConnectionCloses) {
  for (const char* target :
       {"/submit%00.png", "/submit%00junk", "/metrics%00", "/metrics%0a", "/metrics%7F",
        "/metrics?x=%00", "/met%01rics", "/metrics\x01", "/metrics?a=\x7f"}) {
    const bool post = std::string(target).rfind("/submit", 0) == 0;
    ExpectOne400AndClose(port(), std::string(post ? "POST " : "GET ") + target +
                                     " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    ExpectOne400AndClose(port(), std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  EXPECT_EQ(calls_.load(), 0);
  // Percent-encoded printable bytes and spaces are fine.
  EXPECT_EQ(Exchange(port(),
                     "GET /metrics?name%5B%5D=a%2Fb%20c HTTP/1.1\r\nHost: x\r\n"
                     "Connection: close\r\n\r\n")
                .status,
            200);
}

}  // namespace
}  // namespace vmetrics
