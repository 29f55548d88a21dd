// SPDX-License-Identifier: Apache-2.0
// HttpServer's connection guard over loopback (src/server/connection_guard.h): slow, idle,
// half-closed and non-reading clients cannot keep a scrape out. Every wait is a poll with a
// deadline; the only sleeps are the pacing of a deliberately slow client, which is the
// behaviour under test. Every loop is bounded in count and time.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "vmetrics/http_server.h"

namespace vmetrics {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using http_test::ConnectTo;
using http_test::HttpResponse;

constexpr char kBody[] = "up 1.0\n";

std::unique_ptr<HttpServer> StartOrDie(const HttpServerOptions& options,
                                       HttpHandlers handlers = {}) {
  if (!handlers.render_metrics) {
    handlers.render_metrics = [](ExpositionFormat) { return std::string(kBody); };
  }
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

// Closes every descriptor it holds when it goes, so a failed ASSERT leaks nothing.
struct Descriptors {
  std::vector<int> fds;
  ~Descriptors() {
    for (int fd : fds) close(fd);
  }
};

// Raises the soft limit on open descriptors to at least `wanted`, within the hard limit.
bool EnsureFileLimit(rlim_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= wanted) return true;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted) return false;
  limit.rlim_cur = wanted;
  return setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

// A connection to 127.0.0.1:port from `source` (another loopback address, so the server sees
// another client), with 10 s send and receive timeouts; -1 on failure.
int ConnectFrom(const char* source, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `raw` on `fd` and reads one response (the socket's 10 s timeout bounds it).
HttpResponse ExchangeOn(int fd, const std::string& raw) {
  HttpResponse response;
  response.connected = true;
  if (send(fd, raw.data(), raw.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(raw.size())) {
    return response;
  }
  std::string buffer;
  http_test::ReadSocketResponse(fd, /*head_request=*/false, &buffer, &response);
  return response;
}

// A GET of `target` from `source`, on a connection of its own.
HttpResponse GetFrom(const char* source, uint16_t port, const std::string& target) {
  const int fd = ConnectFrom(source, port);
  if (fd < 0) return HttpResponse{};
  HttpResponse r = ExchangeOn(fd, http_test::Request("GET", target));
  close(fd);
  return r;
}

// Reads and drops whatever arrives on `fd` until the server ends the connection (true) or
// `deadline` passes (false). `received`, when given, counts the bytes read.
bool EndsBy(int fd, Clock::time_point deadline, size_t* received = nullptr) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t got = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (got == 0) return true;
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return true;  // reset
    }
    if (received != nullptr) *received += static_cast<size_t>(got);
  }
}

long long Millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The probe: 1,100 connections from one address, each with part of a request line sent (a
// client sending a byte every few seconds never lets the idle timeout fire). libmicrohttpd's
// own limit (1,024) was full, and every scrape waited in the accept queue for as long as they
// lasted. Now one address holds at most max_connections_per_address (512) connections, the
// new ones taking the place of those waiting longest, and a scrape from elsewhere is answered
// at once.
TEST(HttpServerGuard, SlowConnectionsFromOneAddressDoNotKeepAScrapeOut) {
  constexpr int kSlow = 1100;
  if (!EnsureFileLimit(2 * kSlow + 256)) {
    GTEST_SKIP() << "cannot raise RLIMIT_NOFILE to " << 2 * kSlow + 256;
  }
  HttpServerOptions options;  // the defaults: 1,024 connections, 512 per address
  options.port = 0;
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  Descriptors slow;
  slow.fds.reserve(kSlow);
  const std::string part = "GET /metrics HTTP/1.1\r\nHo";
  for (int i = 0; i < kSlow; ++i) {
    const int fd = ConnectTo("127.0.0.1", port);
    ASSERT_GE(fd, 0) << "connection " << i << " refused";
    ASSERT_EQ(send(fd, part.data(), part.size(), MSG_NOSIGNAL), static_cast<ssize_t>(part.size()));
    slow.fds.push_back(fd);
  }

  const auto begin = Clock::now();
  HttpResponse r = GetFrom("127.0.0.2", port, "/metrics");
  const auto took = Clock::now() - begin;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kBody);
  EXPECT_LT(took, 1s) << "scrape took " << Millis(took) << " ms";
  EXPECT_EQ(GetFrom("127.0.0.2", port, "/health").status, 200);

  // The slow address keeps no more than its share: the oldest of its connections were closed.
  const auto deadline = Clock::now() + 5s;
  int ended = 0;
  for (int fd : slow.fds) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 1) ++ended;
  }
  for (int i = 0; i < 100 && ended < kSlow - 512; ++i) {
    ended = 0;
    for (int fd : slow.fds) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) == 1) ++ended;
    }
    if (Clock::now() > deadline) break;
    pollfd none{-1, 0, 0};
    poll(&none, 1, 50);  // a pause between counts, bounded by the loop and the deadline
  }
  EXPECT_GE(ended, kSlow - 512);
}

// A client that sends its request a byte at a time never lets the idle timeout fire; the
// request deadline counts from the request's first byte, so it is closed after
// request_timeout_s however it paces its bytes.
TEST(HttpServerGuard, ARequestSentAByteAtATimeIsCutAtTheDeadline) {
  HttpServerOptions options;
  options.port = 0;
  options.request_timeout_s = 1;
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  const int fd = ConnectTo("127.0.0.1", server->port());
  ASSERT_GE(fd, 0);
  Descriptors owned{{fd}};

  // 100 bytes at 50 ms: about 5 s to send whole, well past the deadline.
  const std::string raw =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(59, 'a') + "\r\n\r\n";
  const auto begin = Clock::now();
  bool ended = false;
  for (size_t i = 0; i < raw.size() && !ended; ++i) {
    if (send(fd, &raw[i], 1, MSG_NOSIGNAL) != 1) {
      ended = true;
      break;
    }
    // The pacing is the behaviour under test; the wait also watches for the server's close.
    ended = EndsBy(fd, Clock::now() + 50ms);
  }
  const auto took = Clock::now() - begin;
  EXPECT_TRUE(ended) << "the server read the whole trickled request";
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 2500ms) << "closed after " << Millis(took) << " ms";
}

// A client that asks for a large exposition and never reads it holds the body only until the
// reply deadline: then the server closes the connection and frees the body, and the client,
// reading at last, gets only what the kernels had buffered (without the deadline it would get
// the whole body: the server waited for it for as long as it kept the connection).
TEST(HttpServerGuard, AReplyNotReadIsCutAtTheDeadline) {
  HttpServerOptions options;
  options.port = 0;
  options.request_timeout_s = 1;
  HttpHandlers handlers;
  // Well above what the two kernels buffer for a client that does not read (its receive
  // window does not grow; the sender buffers at most tcp_wmem, 4 MiB by default).
  const std::string big(32 << 20, 'x');
  handlers.render_metrics = [&big](ExpositionFormat) { return big; };
  std::unique_ptr<HttpServer> server = StartOrDie(options, std::move(handlers));
  ASSERT_NE(server, nullptr);
  const int fd = ConnectTo("127.0.0.1", server->port());
  ASSERT_GE(fd, 0);
  Descriptors owned{{fd}};
  const std::string request = http_test::Request("GET", "/metrics");
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  // Not reading for 2.5 s is what this client does (the behaviour under test).
  std::this_thread::sleep_for(2500ms);
  // Then it reads as fast as it can: 32 MiB over loopback take well under the 5 s allowed.
  size_t received = 0;
  EndsBy(fd, Clock::now() + 5s, &received);
  EXPECT_LT(received, big.size()) << "the whole reply was delivered to a client that waited";
  EXPECT_EQ(http_test::Get(server->port(), "/health").status, 200);
}

// Reads from `fd` up to the end of a response head; false when the connection ends first.
bool ReadHead(int fd) {
  std::string head;
  char byte;
  while (head.size() < 4096) {
    if (recv(fd, &byte, 1, 0) != 1) return false;
    head.push_back(byte);
    if (head.ends_with("\r\n\r\n")) return head.starts_with("HTTP/1.1 200");
  }
  return false;
}

// Eight clients that ask for a large exposition and do not read it: each held its own render,
// eight copies. Now at most max_rendered_bodies (4) are made while they are held, the other
// clients sharing the newest; once they are gone, the next scrape renders afresh.
TEST(HttpServerGuard, ClientsNotReadingALargeExpositionShareRenderedBodies) {
  constexpr int kClients = 8;
  HttpServerOptions options;
  options.port = 0;
  options.request_timeout_s = 60;  // held for the whole test
  std::atomic<int> renders{0};
  HttpHandlers handlers;
  handlers.render_metrics = [&renders](ExpositionFormat) {
    ++renders;
    return std::string(8 << 20, 'x');
  };
  std::unique_ptr<HttpServer> server = StartOrDie(options, std::move(handlers));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  auto readers = std::make_unique<Descriptors>();
  const std::string request = http_test::Request("GET", "/metrics", {}, /*close=*/false);
  for (int i = 0; i < kClients; ++i) {
    const int fd = ConnectTo("127.0.0.1", port);
    ASSERT_GE(fd, 0);
    readers->fds.push_back(fd);
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    ASSERT_TRUE(ReadHead(fd)) << "client " << i;  // answered; the body stays unread
  }
  EXPECT_EQ(renders.load(), 4);
  // A client that reads gets the whole body (a shared one: no render).
  HttpResponse r = http_test::Get(port, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), size_t{8} << 20);
  EXPECT_EQ(renders.load(), 4);

  // The non-readers go; their bodies are freed, and a scrape renders again.
  readers.reset();
  const auto deadline = Clock::now() + 5s;
  while (renders.load() == 4 && Clock::now() < deadline) {
    EXPECT_EQ(http_test::Get(port, "/metrics").status, 200);
  }
  EXPECT_GT(renders.load(), 4);
}

// Clients that half-close their connection partway through a request (as wrk and crashed
// scripts leave them) can never complete it; libmicrohttpd kept them in CLOSE-WAIT until the
// idle timeout, holding connection slots. They are closed within a few sweeps now, and the
// slots they held serve scrapes again.
TEST(HttpServerGuard, HalfClosedConnectionsAreClosedAtOnce) {
  constexpr int kHalfClosed = 50;
  HttpServerOptions options;
  options.port = 0;
  options.max_connections = kHalfClosed;
  options.max_connections_per_address = 0;
  options.scrape_reserve_connections = 0;
  options.request_timeout_s = 0;  // only the half-close can end them
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  Descriptors half;
  const std::string part = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < kHalfClosed; ++i) {
    const int fd = ConnectTo("127.0.0.1", port);
    ASSERT_GE(fd, 0);
    half.fds.push_back(fd);
    ASSERT_EQ(send(fd, part.data(), part.size(), MSG_NOSIGNAL), static_cast<ssize_t>(part.size()));
    ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  }
  const auto begin = Clock::now();
  const auto deadline = begin + 3s;
  int ended = 0;
  for (int fd : half.fds) ended += EndsBy(fd, deadline) ? 1 : 0;
  EXPECT_EQ(ended, kHalfClosed) << "after " << Millis(Clock::now() - begin) << " ms";

  HttpResponse r = GetFrom("127.0.0.2", port, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kBody);
}

// POST /wait, whose requests are held unanswered (a route waiting for engines) until Release.
class HeldRequests {
 public:
  static constexpr char kPost[] = "POST /wait HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";

  HttpRoute Route() {
    HttpRoute route;
    route.method = "POST";
    route.path = "/wait";
    route.handler = [this](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(std::move(exchange));
    };
    return route;
  }
  // Until `n` requests reached the route (polled, bounded).
  bool WaitFor(size_t n) {
    const auto deadline = Clock::now() + 5s;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (held_.size() == n) return true;
      }
      if (Clock::now() > deadline) return false;
      pollfd none{-1, 0, 0};
      poll(&none, 1, 10);
    }
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<HttpExchange>& exchange : held_) {
      exchange->Reply(HttpReply{200, "text/plain", "done"});
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<HttpExchange>> held_;
};

// Sends HeldRequests::kPost from `source` on a new connection, kept in `fds`.
void SendHeld(const char* source, uint16_t port, Descriptors* fds) {
  const int fd = ConnectFrom(source, port);
  ASSERT_GE(fd, 0);
  fds->fds.push_back(fd);
  const std::string post = HeldRequests::kPost;
  ASSERT_EQ(send(fd, post.data(), post.size(), MSG_NOSIGNAL), static_cast<ssize_t>(post.size()));
}

// When every connection is busy with a route's request (waiting for engines), a scrape is
// still admitted, into the scrape reserve; any other request there is answered 503.
TEST(HttpServerGuard, TheScrapeReserveServesScrapesWhenEveryConnectionIsBusy) {
  constexpr int kBusy = 4;
  HttpServerOptions options;
  options.port = 0;
  options.threads = 2;
  options.max_connections = kBusy;
  options.max_connections_per_address = 0;
  options.scrape_reserve_connections = 2;
  HeldRequests held;
  HttpHandlers handlers;
  handlers.routes.push_back(held.Route());
  std::unique_ptr<HttpServer> server = StartOrDie(options, std::move(handlers));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  Descriptors busy;
  for (int i = 0; i < kBusy; ++i) SendHeld("127.0.0.1", port, &busy);
  // Every request reached its handler: the connections are busy.
  ASSERT_TRUE(held.WaitFor(kBusy)) << "the busy requests never reached the handler";

  const auto begin = Clock::now();
  HttpResponse scrape = GetFrom("127.0.0.2", port, "/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_EQ(scrape.body, kBody);
  EXPECT_LT(Clock::now() - begin, 1s);
  EXPECT_EQ(GetFrom("127.0.0.2", port, "/health").status, 200);

  const int fd = ConnectFrom("127.0.0.2", port);
  ASSERT_GE(fd, 0);
  Descriptors owned{{fd}};
  HttpResponse refused = ExchangeOn(fd, HeldRequests::kPost);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.Header("Retry-After"), "1");
  EXPECT_EQ(held.size(), static_cast<size_t>(kBusy));
  held.Release();
}

// Two addresses with many long requests (each past light_client_connections) stop short of the
// light reserve: another client's request is still admitted and answered, and a heavy address
// past its share gets the full server's 503 for an API request.
TEST(HttpServerGuard, HeavyAddressesLeaveTheLightReserveToOtherClients) {
  constexpr int kMax = 32;  // light reserve: 32 / 16 = 2
  HttpServerOptions options;
  options.port = 0;
  options.threads = 2;
  options.max_connections = kMax;
  options.max_connections_per_address = 0;
  options.scrape_reserve_connections = 2;
  HeldRequests held;
  HttpHandlers handlers;
  handlers.routes.push_back(held.Route());
  HttpRoute quick;
  quick.method = "POST";
  quick.path = "/quick";
  quick.handler = [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
    exchange->Reply(HttpReply{200, "text/plain", "quick"});
  };
  handlers.routes.push_back(std::move(quick));
  std::unique_ptr<HttpServer> server = StartOrDie(options, std::move(handlers));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  // 15 long requests from each of two addresses: 30 busy, the 2 left are the light reserve.
  Descriptors busy;
  for (const char* source : {"127.0.0.3", "127.0.0.4"}) {
    for (int i = 0; i < (kMax - 2) / 2; ++i) SendHeld(source, port, &busy);
  }
  ASSERT_TRUE(held.WaitFor(kMax - 2)) << "the long requests never reached the handler";
  // A heavy address asking for one more: the server is full for it.
  {
    const int fd = ConnectFrom("127.0.0.3", port);
    ASSERT_GE(fd, 0);
    Descriptors owned{{fd}};
    EXPECT_EQ(ExchangeOn(fd, HeldRequests::kPost).status, 503);
  }
  // Another client's request is served.
  {
    const int fd = ConnectFrom("127.0.0.5", port);
    ASSERT_GE(fd, 0);
    Descriptors owned{{fd}};
    HttpResponse r = ExchangeOn(fd, "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "quick");
  }
  held.Release();
}

// 5,000 bad requests wrote 5,062 lines. Now each kind is written once per interval, and the
// rest are counted in one more line (at Stop, at the latest).
// A request libmicrohttpd answers itself (505), logging a line, and closes.
constexpr char kUnsupportedVersion[] = "GET / HTTP/9.9\r\nHost: x\r\n\r\n";

// Sends `count` requests libmicrohttpd refuses (it logs and closes) to a server whose
// error log interval is `interval_s`; returns the lines logged up to Stop.
std::vector<std::string> LinesForBadRequests(int count, unsigned interval_s) {
  std::mutex mu;
  std::vector<std::string> lines;
  HttpServerOptions options;
  options.port = 0;
  options.error_log_interval_s = interval_s;
  HttpHandlers handlers;
  handlers.log = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  };
  std::unique_ptr<HttpServer> server = StartOrDie(options, std::move(handlers));
  if (server == nullptr) return {};
  for (int i = 0; i < count; ++i) http_test::Exchange(server->port(), kUnsupportedVersion);
  server->Stop();
  std::lock_guard<std::mutex> lock(mu);
  return lines;
}

TEST(HttpServerGuard, ErrorsAreLoggedOncePerKindWithACount) {
  constexpr int kBad = 300;
  // Unthrottled (interval 0, the old behaviour): a line or more per bad request.
  EXPECT_GE(LinesForBadRequests(kBad, 0).size(), static_cast<size_t>(kBad));
  const std::vector<std::string> lines = LinesForBadRequests(kBad, 60);
  EXPECT_LE(lines.size(), 6u);
  ASSERT_FALSE(lines.empty());
  bool counted = false;
  for (const std::string& line : lines) {
    if (line.find("more like this in the last 60 s)") != std::string::npos) counted = true;
  }
  EXPECT_TRUE(counted) << lines.front();
}

}  // namespace
}  // namespace vmetrics
