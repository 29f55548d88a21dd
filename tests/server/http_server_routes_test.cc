// SPDX-License-Identifier: Apache-2.0
// The application's routes (HttpHandlers::routes) over real sockets: which request reaches
// which handler, what the server answers on a route's behalf (404, 405 with Allow, 413 and
// 500 in the route's words), and the HttpExchange a handler answers on (later, from another
// thread, streamed, after the client hung up, when the server stops). No sleeps: where a test
// needs a handler to be running it waits on a promise the handler fulfils.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "vmetrics/http_server.h"

namespace vmetrics {
namespace {

using http_test::Exchange;
using http_test::Get;
using http_test::HttpResponse;

std::unique_ptr<HttpServer> StartOrDie(HttpServerOptions options, HttpHandlers handlers) {
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

HttpServerOptions EphemeralOptions() {
  HttpServerOptions options;
  options.port = 0;
  return options;
}

HttpHandlers WithRoutes(std::vector<HttpRoute> routes) {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  handlers.routes = std::move(routes);
  return handlers;
}

HttpRoute Route(std::string method, std::string path,
                std::function<void(HttpRequest, std::shared_ptr<HttpExchange>)> handler) {
  HttpRoute route;
  route.method = std::move(method);
  route.path = std::move(path);
  route.handler = std::move(handler);
  return route;
}

// A handler that answers at once with `body`.
std::function<void(HttpRequest, std::shared_ptr<HttpExchange>)> Answer(std::string body) {
  return [body](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->Reply(200, "application/json", body);
  };
}

// A JSON API's error wording, so a test can tell it from the server's plain default.
HttpReply JsonError(unsigned status, std::string_view message) {
  return HttpReply{status, "application/json",
                   R"({"status":)" + std::to_string(status) + R"(,"message":")" +
                       std::string(message) + R"("})"};
}

std::string Post(std::string_view path, std::string_view body, bool close = true) {
  return "POST " + std::string(path) +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
         (close ? "\r\nConnection: close" : "") + "\r\n\r\n" + std::string(body);
}

// ---- which request reaches which handler ----

TEST(HttpServerRoutes, UnknownPathIs404AndKnownPathWithAnotherMethodIs405WithAllow) {
  std::atomic<int> calls{0};
  auto count = [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    calls.fetch_add(1);
    exchange->Reply(200, "text/plain", "ok");
  };
  std::unique_ptr<HttpServer> server = StartOrDie(
      EphemeralOptions(), WithRoutes({Route("POST", "/submit", count), Route("GET", "/both", count),
                                      Route("POST", "/both", count)}));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  for (const char* path : {"/nope", "/submit/", "/Submit", "/submi"}) {
    HttpResponse r = Exchange(port, Post(path, "{}"));
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body, R"({"detail":"Not Found"})") << path;
    EXPECT_EQ(r.Header("Content-Type"), "application/json") << path;
  }
  HttpResponse get = Get(port, "/submit");
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(get.Header("Allow"), "POST");
  EXPECT_EQ(get.body, R"({"detail":"Method Not Allowed"})");
  // Methods are case-sensitive, and HEAD is not implied by GET.
  EXPECT_EQ(Exchange(port, Post("/submit", "{}").replace(0, 4, "post")).status, 405);
  HttpResponse head = Exchange(port, http_test::Request("HEAD", "/both"), {.head = true});
  EXPECT_EQ(head.status, 405);
  HttpResponse del = Exchange(port, http_test::Request("DELETE", "/both"));
  EXPECT_EQ(del.status, 405);
  EXPECT_EQ(del.Header("Allow"), "GET, POST");
  EXPECT_EQ(calls.load(), 0) << "a refused request reached a handler";

  // The query string is not part of the path; both methods of /both are served.
  EXPECT_EQ(Exchange(port, Post("/submit?x=1", "{}")).status, 200);
  EXPECT_EQ(Get(port, "/both").status, 200);
  EXPECT_EQ(Exchange(port, Post("/both", "")).status, 200);
  EXPECT_EQ(calls.load(), 3);
  // The server's own paths are untouched by the routes.
  EXPECT_EQ(Get(port, "/metrics").body, "up 1.0\n");
  EXPECT_EQ(Get(port, "/health").status, 200);
}

// The body arrives whole and unchanged, however the client cut it into segments, and the
// connection stays usable for the next request.
TEST(HttpServerRoutes, RegisteredPostRouteGetsItsBody) {
  std::mutex mu;
  std::vector<HttpRequest> seen;
  auto record = [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
    const std::string size = std::to_string(request.body.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(std::move(request));
    }
    exchange->Reply(200, "text/plain", size);
  };
  std::unique_ptr<HttpServer> server =
      StartOrDie(EphemeralOptions(), WithRoutes({Route("POST", "/submit", record)}));
  ASSERT_NE(server, nullptr);
  std::string big(300 * 1024, 'x');
  for (size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  const std::vector<HttpResponse> replies = http_test::ExchangeInTurn(
      server->port(),
      {Post("/submit", R"({"prompt":[1,2,3]})", /*close=*/false), Post("/submit", big)});
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body, "18");
  EXPECT_EQ(replies[1].status, 200);
  EXPECT_EQ(replies[1].body, std::to_string(big.size()));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/submit");
  EXPECT_EQ(seen[0].body, R"({"prompt":[1,2,3]})");
  EXPECT_TRUE(seen[1].body == big) << "the large body arrived changed";
}

// A body over the route's limit never reaches the handler; the 413 is in the route's words
// (error_reply), or plain text from a route without them. The limit is the route's own when
// it sets one, else the server's.
TEST(HttpServerRoutes, BodyOverTheLimitGetsTheRoutes413) {
  std::atomic<int> calls{0};
  auto count = [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    calls.fetch_add(1);
    exchange->Reply(200, "text/plain", "ok");
  };
  HttpRoute worded = Route("POST", "/worded", count);
  worded.max_body_bytes = 16;
  worded.error_reply = JsonError;
  HttpRoute plain = Route("POST", "/plain", count);
  HttpServerOptions options = EphemeralOptions();
  options.max_body_bytes = 64;
  std::unique_ptr<HttpServer> server = StartOrDie(options, WithRoutes({worded, plain}));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  HttpResponse r = Exchange(port, Post("/worded", std::string(17, 'x')));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.body, R"({"status":413,"message":"request body larger than 16 bytes"})");
  EXPECT_EQ(Exchange(port, Post("/worded", std::string(16, 'x'))).status, 200);

  HttpResponse p = Exchange(port, Post("/plain", std::string(65, 'x')));
  EXPECT_EQ(p.status, 413);
  EXPECT_EQ(p.Header("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(p.body, "request body larger than 64 bytes");
  EXPECT_EQ(Exchange(port, Post("/plain", std::string(64, 'x'))).status, 200);
  // A megabyte over the limit costs the server nothing but reading it.
  EXPECT_EQ(Exchange(port, Post("/plain", std::string(1 << 20, 'x'))).status, 413);
  EXPECT_EQ(calls.load(), 2);
}

TEST(HttpServerRoutes, ThrowingHandlerIs500InTheRoutesWordsAndIsLogged) {
  std::mutex mu;
  std::vector<std::string> logged;
  HttpRoute route = Route("POST", "/boom", [](HttpRequest, std::shared_ptr<HttpExchange>) {
    throw std::runtime_error("exploded");
  });
  route.error_reply = JsonError;
  HttpHandlers handlers = WithRoutes({route});
  handlers.log = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    logged.emplace_back(line);
  };
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralOptions(), handlers);
  ASSERT_NE(server, nullptr);
  HttpResponse r = Exchange(server->port(), Post("/boom", "{}"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, R"({"status":500,"message":"exploded"})");
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
  server->Stop();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0], "handler for POST /boom threw: exploded");
}

TEST(HttpServerRoutes, StartRefusesRoutesItCannotServe) {
  const auto ok = Answer("{}");
  struct Case {
    std::vector<HttpRoute> routes;
    std::string message_part;
  };
  const Case cases[] = {
      {{Route("POST", "/a", nullptr)}, "POST /a: no handler"},
      {{Route("", "/a", ok)}, "not an HTTP token"},
      {{Route("GET POST", "/a", ok)}, "not an HTTP token"},
      {{Route("GET", "a", ok)}, "must start with '/'"},
      {{Route("GET", "/a?b=1", ok)}, "must start with '/'"},
      {{Route("GET", "/metrics", ok)}, "serves this path itself"},
      {{Route("POST", "/health", ok)}, "serves this path itself"},
      {{Route("POST", "/a", ok), Route("GET", "/a", ok), Route("POST", "/a", ok)}, "given twice"},
  };
  for (const Case& c : cases) {
    Result<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(EphemeralOptions(), WithRoutes(c.routes));
    ASSERT_FALSE(server.ok()) << c.message_part;
    EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(server.status().message().find(c.message_part), std::string::npos)
        << server.status().message();
  }
}

// ---- the exchange a handler answers on ----

// An exchange answered later, from another thread, reaches the client; one never answered is
// answered 503 by Stop (in the route's words), which returns (a suspended connection would
// otherwise hang it).
TEST(HttpServerExchange, AnswerFromAnotherThreadAndStopAnswersTheRest) {
  std::promise<std::shared_ptr<HttpExchange>> first, second;
  std::atomic<int> calls{0};
  HttpRoute route =
      Route("POST", "/submit", [&](HttpRequest request, std::shared_ptr<HttpExchange> exchange) {
        EXPECT_EQ(request.body, R"({"prompt":[1]})");
        (calls.fetch_add(1) == 0 ? first : second).set_value(std::move(exchange));
      });
  route.error_reply = JsonError;
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralOptions(), WithRoutes({route}));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  std::future<HttpResponse> answered = std::async(
      std::launch::async, [port] { return Exchange(port, Post("/submit", R"({"prompt":[1]})")); });
  std::shared_ptr<HttpExchange> exchange = first.get_future().get();
  std::thread([exchange] { exchange->Reply(200, "application/json", R"({"ok":true})"); }).join();
  HttpResponse r = answered.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"ok":true})");
  EXPECT_EQ(r.Header("Content-Type"), "application/json");

  std::future<HttpResponse> pending = std::async(
      std::launch::async, [port] { return Exchange(port, Post("/submit", R"({"prompt":[1]})")); });
  std::shared_ptr<HttpExchange> never = second.get_future().get();
  server->Stop();
  HttpResponse stopped = pending.get();
  EXPECT_TRUE(stopped.status == 503 || stopped.status == 0) << stopped.status;
  if (stopped.status == 503) {
    EXPECT_EQ(stopped.body, R"({"status":503,"message":"the server is stopping"})");
  }
  EXPECT_FALSE(never->Write("late")) << "nothing reaches a client after Stop";
}

TEST(HttpServerExchange, StreamedChunksArriveInOrderAndTheEndClosesTheBody) {
  std::thread writer;
  HttpRoute route =
      Route("POST", "/stream", [&writer](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
        exchange->StartStream("text/event-stream");
        writer = std::thread([exchange] {
          for (int i = 0; i < 3; ++i) exchange->Write("data: " + std::to_string(i) + "\n\n");
          exchange->End();
          EXPECT_FALSE(exchange->Write("after the end"));
        });
      });
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralOptions(), WithRoutes({route}));
  ASSERT_NE(server, nullptr);
  HttpResponse r = Exchange(server->port(), Post("/stream", "{}"));
  if (writer.joinable()) writer.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.Header("Cache-Control"), "no-cache");
  EXPECT_NE(r.body.find("data: 0\n\n"), std::string::npos) << r.body;
  EXPECT_LT(r.body.find("data: 0"), r.body.find("data: 2")) << r.body;
}

// A client that gives up on a waiting (non-streamed) answer and closes its connection: the
// server notices without writing anything, runs the exchange's client-gone callback once, and
// a late answer goes nowhere. The server carries on.
TEST(HttpServerExchange, ClientHangingUpOnAWaitingAnswerIsNoticed) {
  std::promise<std::shared_ptr<HttpExchange>> handed;
  std::promise<void> gone;
  std::atomic<int> gone_calls{0};
  HttpRoute route =
      Route("POST", "/submit", [&](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
        exchange->SetOnClientGone([&] {
          if (gone_calls.fetch_add(1) == 0) gone.set_value();
        });
        handed.set_value(std::move(exchange));
      });
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralOptions(), WithRoutes({route}));
  ASSERT_NE(server, nullptr);
  const int fd = http_test::ConnectTo("127.0.0.1", server->port());
  ASSERT_GE(fd, 0);
  const std::string request = Post("/submit", R"({"prompt":[1]})");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::shared_ptr<HttpExchange> exchange = handed.get_future().get();
  close(fd);
  ASSERT_EQ(gone.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the hang-up was not noticed";
  exchange->Reply(200, "application/json", "{}");  // nobody to answer: nothing happens
  EXPECT_FALSE(exchange->Write("late"));
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
  server->Stop();
  EXPECT_EQ(gone_calls.load(), 1);
}

// One response read from `fd` (the connection stays open).
HttpResponse ReadOne(int fd, std::string* buffer) {
  HttpResponse response;
  http_test::ReadSocketResponse(fd, /*head_request=*/false, buffer, &response);
  return response;
}

// A waiting exchange per request, handed out in order, each noting whether its client left.
class WaitingExchanges {
 public:
  HttpRoute Route(std::string path) {
    return vmetrics::Route("POST", std::move(path),
                           [this](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
                             std::lock_guard<std::mutex> lock(mu_);
                             const size_t index = exchanges_.size();
                             exchange->SetOnClientGone([this, index] {
                               std::lock_guard<std::mutex> gone_lock(mu_);
                               gone_.push_back(index);
                               cv_.notify_all();
                             });
                             exchanges_.push_back(std::move(exchange));
                             cv_.notify_all();
                           });
  }
  std::shared_ptr<HttpExchange> Wait(size_t index) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return exchanges_.size() > index; });
    return exchanges_[index];
  }
  // The indices whose client left, once there are `n` of them.
  std::vector<size_t> WaitGone(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return gone_.size() >= n; });
    return gone_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<HttpExchange>> exchanges_;
  std::vector<size_t> gone_;
};

// A kept-alive connection whose first waiting answer came, and whose client then leaves while
// its second waits: the second's client-gone callback runs (its socket, watched for the first
// request already, is watched again), the first's never does.
TEST(HttpServerExchange, ClientHangingUpOnTheSecondWaitOfAConnectionIsNoticed) {
  WaitingExchanges waiting;
  std::unique_ptr<HttpServer> server =
      StartOrDie(EphemeralOptions(), WithRoutes({waiting.Route("/submit")}));
  ASSERT_NE(server, nullptr);
  const int fd = http_test::ConnectTo("127.0.0.1", server->port());
  ASSERT_GE(fd, 0);
  const std::string request = Post("/submit", "{}", /*close=*/false);
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  waiting.Wait(0)->Reply(200, "application/json", R"({"first":1})");
  std::string buffer;
  const HttpResponse first = ReadOne(fd, &buffer);
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, R"({"first":1})");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::shared_ptr<HttpExchange> second = waiting.Wait(1);
  close(fd);
  EXPECT_EQ(waiting.WaitGone(1), std::vector<size_t>{1}) << "the hang-up was not noticed";
  second->Reply(200, "application/json", "{}");  // nobody to answer: nothing happens
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
  server->Stop();
  EXPECT_EQ(waiting.WaitGone(1), std::vector<size_t>{1});
}

// Among many waiting answers, only the one whose client left is told so; the others are
// answered as usual.
TEST(HttpServerExchange, OnlyTheClientThatHungUpIsGone) {
  constexpr size_t kClients = 64;
  constexpr size_t kLeaving = 37;
  WaitingExchanges waiting;
  std::unique_ptr<HttpServer> server =
      StartOrDie(EphemeralOptions(), WithRoutes({waiting.Route("/submit")}));
  ASSERT_NE(server, nullptr);
  std::vector<int> fds;
  for (size_t i = 0; i < kClients; ++i) {
    const int fd = http_test::ConnectTo("127.0.0.1", server->port());
    ASSERT_GE(fd, 0);
    const std::string request = Post("/submit", std::to_string(i));
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    waiting.Wait(i);  // in order: exchange i is client i's
    fds.push_back(fd);
  }
  close(fds[kLeaving]);
  EXPECT_EQ(waiting.WaitGone(1), std::vector<size_t>{kLeaving});
  for (size_t i = 0; i < kClients; ++i) {
    if (i == kLeaving) continue;
    waiting.Wait(i)->Reply(200, "application/json", std::to_string(i));
    std::string buffer;
    const HttpResponse r = ReadOne(fds[i], &buffer);
    EXPECT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.body, std::to_string(i));
    close(fds[i]);
  }
  server->Stop();
  EXPECT_EQ(waiting.WaitGone(1), std::vector<size_t>{kLeaving});
}

// ---- HttpHandlers::observe: one report per request that reached routing ----

// What observe reported, copied (the record's views end with the call); Wait blocks until
// `n` reports came, since a report lands after the reply went out.
class Reports {
 public:
  struct Report {
    std::string method, path, route_path;
    unsigned status = 0;
    uint64_t request_length = 0, response_length = 0;
    double seconds = -1;
  };
  std::function<void(const HttpRequestRecord&)> Observer() {
    return [this](const HttpRequestRecord& r) {
      std::lock_guard<std::mutex> lock(mu_);
      reports_.push_back({std::string(r.method), std::string(r.path), std::string(r.route_path),
                          r.status, r.request_content_length, r.response_content_length,
                          r.duration_seconds});
      cv_.notify_all();
    };
  }
  std::vector<Report> Wait(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return reports_.size() >= n; });
    return reports_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Report> reports_;
};

TEST(HttpServerObserve, EachRoutedRequestIsReportedWithItsSizesAndStatus) {
  Reports reports;
  HttpRoute open =
      Route("POST", "/open", [](const HttpRequest&, const std::shared_ptr<HttpExchange>& ex) {
        ex->Reply(201, "application/json", "abc");
      });
  HttpHandlers handlers = WithRoutes({open, Route("POST", "/v1/x", Answer("{}"))});
  handlers.observe = reports.Observer();
  HttpServerOptions options = EphemeralOptions();
  options.api_keys = {"key"};
  options.api_key_path_prefixes = {"/v1"};
  std::unique_ptr<HttpServer> server = StartOrDie(options, std::move(handlers));
  ASSERT_NE(server, nullptr);

  EXPECT_EQ(Exchange(server->port(), Post("/open", "12345")).status, 201);
  reports.Wait(1);
  // The API key's 401 is refused before routing, as vLLM's middleware outside the app: the
  // next report is the 404's.
  EXPECT_EQ(Exchange(server->port(), Post("/v1/x", "{}")).status, 401);
  EXPECT_EQ(Get(server->port(), "/nowhere").status, 404);
  reports.Wait(2);
  EXPECT_EQ(Get(server->port(), "/open").status, 405);
  reports.Wait(3);
  EXPECT_EQ(Get(server->port(), "/metrics").status, 200);
  const std::vector<Reports::Report> r = reports.Wait(4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].method, "POST");
  EXPECT_EQ(r[0].path, "/open");
  EXPECT_EQ(r[0].route_path, "/open");
  EXPECT_EQ(r[0].status, 201u);
  EXPECT_EQ(r[0].request_length, 5u);
  EXPECT_EQ(r[0].response_length, 3u);
  EXPECT_GE(r[0].seconds, 0.0);
  EXPECT_EQ(r[1].path, "/nowhere");
  EXPECT_EQ(r[1].route_path, "");  // no route: the instrumentator's "none"
  EXPECT_EQ(r[1].status, 404u);
  EXPECT_EQ(r[1].response_length, std::string_view(R"({"detail":"Not Found"})").size());
  EXPECT_EQ(r[2].method, "GET");
  EXPECT_EQ(r[2].route_path, "");  // the path is a route's, the method is not
  EXPECT_EQ(r[2].status, 405u);
  EXPECT_EQ(r[3].route_path, "/metrics");
  EXPECT_EQ(r[3].response_length, std::string_view("up 1.0\n").size());
}

// A client that leaves before the answer: reported when its connection ends, as a 500 (the
// instrumentator's status for a reply that never started).
TEST(HttpServerObserve, ClientLeavingBeforeTheAnswerIsA500) {
  Reports reports;
  std::promise<std::shared_ptr<HttpExchange>> handed;
  HttpRoute route =
      Route("POST", "/submit", [&](const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
        handed.set_value(std::move(ex));
      });
  HttpHandlers handlers = WithRoutes({route});
  handlers.observe = reports.Observer();
  std::unique_ptr<HttpServer> server = StartOrDie(EphemeralOptions(), std::move(handlers));
  ASSERT_NE(server, nullptr);
  const int fd = http_test::ConnectTo("127.0.0.1", server->port());
  ASSERT_GE(fd, 0);
  const std::string request = Post("/submit", "[1]");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::shared_ptr<HttpExchange> exchange = handed.get_future().get();
  close(fd);
  const std::vector<Reports::Report> r = reports.Wait(1);
  EXPECT_EQ(r[0].route_path, "/submit");
  EXPECT_EQ(r[0].status, 500u);
  EXPECT_EQ(r[0].request_length, 3u);
  EXPECT_EQ(r[0].response_length, 0u);
}

}  // namespace
}  // namespace vmetrics
