// SPDX-License-Identifier: Apache-2.0
// HttpServer under abusive clients, over loopback: clients that send a request one byte at a
// time, and a thousand connections that never send anything, must not stall other scrapes.
// Synchronisation is by futures; the only sleeps are the slow clients' pacing, which is the
// behaviour under test. Every loop is bounded.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http_test_client.h"
#include "vmetrics/http_server.h"

namespace vmetrics {
namespace {

using namespace std::chrono_literals;
using http_test::ConnectTo;
using http_test::Get;
using http_test::HttpResponse;

constexpr char kBody[] = "up 1.0\n";

std::unique_ptr<HttpServer> StartOrDie(const HttpServerOptions& options) {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string(kBody); };
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

// Sends `raw` one byte every `interval`, then reads the response. `first_byte_sent` is
// fulfilled once the first byte is out (or the connection failed).
HttpResponse TrickleRequest(uint16_t port, const std::string& raw,
                            std::chrono::milliseconds interval,
                            std::promise<void> first_byte_sent) {
  HttpResponse response;
  const int fd = ConnectTo("127.0.0.1", port);
  if (fd < 0) {
    first_byte_sent.set_value();
    return response;
  }
  response.connected = true;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (send(fd, &raw[i], 1, MSG_NOSIGNAL) != 1) break;
    if (i == 0) first_byte_sent.set_value();
    // The pacing is what is being tested, not a wait for something to happen.
    if (i + 1 < raw.size()) std::this_thread::sleep_for(interval);
  }
  std::string buffer;
  http_test::ReadSocketResponse(fd, /*head_request=*/false, &buffer, &response);
  close(fd);
  return response;
}

// One worker thread, so the slow connections and the scrapes share one event loop: if a slow
// client could block it, every scrape would wait.
TEST(HttpServerLimits, SlowClientsDoNotStallOtherScrapes) {
  HttpServerOptions options;
  options.port = 0;
  options.threads = 1;
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  constexpr int kSlowClients = 4;
  constexpr auto kByteInterval = 100ms;
  // 25 bytes: the slow clients take about 2.4 s to finish their requests.
  const std::string slow_request = "GET /metrics HTTP/1.0\r\n\r\n";
  std::vector<std::future<void>> started;
  std::vector<std::future<HttpResponse>> slow;
  for (int i = 0; i < kSlowClients; ++i) {
    std::promise<void> first_byte;
    started.push_back(first_byte.get_future());
    slow.push_back(std::async(std::launch::async, TrickleRequest, port, slow_request,
                              std::chrono::milliseconds(kByteInterval), std::move(first_byte)));
  }
  for (std::future<void>& s : started) {
    ASSERT_EQ(s.wait_for(10s), std::future_status::ready) << "a slow client never started";
  }

  auto any_slow_done = [&] {
    return std::any_of(slow.begin(), slow.end(), [](const std::future<HttpResponse>& f) {
      return f.wait_for(0s) == std::future_status::ready;
    });
  };
  constexpr int kMaxScrapes = 200;
  int scrapes_while_slow = 0;
  auto slowest = std::chrono::steady_clock::duration::zero();
  for (int i = 0; i < kMaxScrapes && !any_slow_done(); ++i) {
    const auto begin = std::chrono::steady_clock::now();
    HttpResponse r = Get(port, "/metrics");
    slowest = std::max(slowest, std::chrono::steady_clock::now() - begin);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, kBody);
    ++scrapes_while_slow;
  }
  // A scrape takes about a millisecond; one stalled behind a slow client would take until
  // that client finished, seconds later.
  EXPECT_GE(scrapes_while_slow, 10) << "the slow clients finished before the scrapes ran";
  EXPECT_LT(slowest, 1s) << "slowest scrape: "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count()
                         << " ms";

  // And the slow clients themselves are served in the end.
  for (std::future<HttpResponse>& f : slow) {
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
    HttpResponse r = f.get();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, kBody);
  }
}

// Raises the soft limit on open descriptors to at least `wanted`, within the hard limit.
bool EnsureFileLimit(rlim_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= wanted) return true;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted) return false;
  limit.rlim_cur = wanted;
  return setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

TEST(HttpServerLimits, ThousandIdleConnectionsDoNotStallAScrape) {
  constexpr int kIdle = 1000;
  // Both ends of every connection live in this process, plus the server's own descriptors.
  if (!EnsureFileLimit(2 * kIdle + 256)) {
    GTEST_SKIP() << "cannot raise RLIMIT_NOFILE to " << 2 * kIdle + 256;
  }
  HttpServerOptions options;  // the defaults: max_connections 1024, 2 threads, 30 s timeout
  options.port = 0;
  // All from one address, which by default may hold only half the connections (the guard's
  // tests cover that); here the point is that idle connections cost a scrape nothing.
  options.max_connections_per_address = 0;
  // Likewise the light-client reserve, which would have the address's newest connections take
  // the places of its oldest past 960.
  options.light_client_reserve_connections = 0;
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();

  const auto begin = std::chrono::steady_clock::now();
  Descriptors idle;
  idle.fds.reserve(kIdle);
  for (int i = 0; i < kIdle; ++i) {
    const int fd = ConnectTo("127.0.0.1", port);
    ASSERT_GE(fd, 0) << "connection " << i << " refused";
    idle.fds.push_back(fd);
  }
  // The scrape's connection queues behind the thousand, so by the time it is answered the
  // server has taken every one of them.
  const auto scrape_begin = std::chrono::steady_clock::now();
  HttpResponse r = Get(port, "/metrics");
  const auto scrape_time = std::chrono::steady_clock::now() - scrape_begin;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kBody);
  EXPECT_LT(scrape_time, 2s);
  EXPECT_EQ(Get(port, "/health").status, 200);

  // The idle connections are still open: nothing was answered or closed on them.
  int still_open = 0;
  for (int fd : idle.fds) {
    char byte;
    const ssize_t got = recv(fd, &byte, 1, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++still_open;
  }
  EXPECT_EQ(still_open, kIdle);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 5s);
}

}  // namespace
}  // namespace vmetrics
