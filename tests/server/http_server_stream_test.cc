// SPDX-License-Identifier: Apache-2.0
// HttpServer's bounds on streams (HttpExchange over loopback): a stream whose client does not
// read holds at most max_stream_unsent_bytes and is then ended as a client that left; one whose
// client takes nothing for stream_write_timeout_s is ended the same way; a client that reads
// slowly but steadily gets its whole stream. Waits are polls with a deadline; the only sleeps
// pace a deliberately slow writer or reader, which is the behaviour under test.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
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

// The streams a route handed over, each with a count of its client-gone notices.
class Streams {
 public:
  struct Stream {
    std::shared_ptr<HttpExchange> exchange;
    std::shared_ptr<std::atomic<int>> gone = std::make_shared<std::atomic<int>>(0);
  };

  // A route that starts a stream on every request and hands it over.
  HttpRoute Route() {
    HttpRoute route;
    route.method = "POST";
    route.path = "/stream";
    route.handler = [this](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
      Stream stream{std::move(exchange)};
      stream.exchange->SetOnClientGone([gone = stream.gone] { gone->fetch_add(1); });
      stream.exchange->StartStream("text/event-stream");
      {
        std::lock_guard<std::mutex> lock(mu_);
        streams_.push_back(std::move(stream));
      }
      handed_.notify_all();
    };
    return route;
  }

  // The first `count` streams handed over, or fewer once `deadline` passed.
  std::vector<Stream> WaitFor(size_t count, Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    handed_.wait_until(lock, deadline, [&] { return streams_.size() >= count; });
    return streams_;
  }

 private:
  std::mutex mu_;
  std::condition_variable handed_;
  std::vector<Stream> streams_;
};

std::unique_ptr<HttpServer> StartOrDie(const HttpServerOptions& options, HttpRoute route,
                                       std::vector<std::string>* log = nullptr,
                                       std::mutex* log_mu = nullptr) {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string("up 1.0\n"); };
  handlers.routes.push_back(std::move(route));
  if (log != nullptr) {
    handlers.log = [log, log_mu](std::string_view message) {
      std::lock_guard<std::mutex> lock(*log_mu);
      log->emplace_back(message);
    };
  }
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handlers));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

HttpServerOptions StreamOptions(size_t max_unsent, unsigned write_timeout_s) {
  HttpServerOptions options;
  options.port = 0;
  options.max_stream_unsent_bytes = max_unsent;
  options.stream_write_timeout_s = write_timeout_s;
  options.error_log_interval_s = 0;  // every message, so a test can look for its own
  return options;
}

// A client that asked for a stream on 127.0.0.1:port, with a small receive buffer (set before
// connecting, so the window is small from the start) so that the kernel holds little of what
// it does not read. -1 on failure.
int OpenStream(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  const std::string request =
      "POST /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}";
  if (connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0 ||
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(request.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// Closes every descriptor it holds when it goes, so a failed ASSERT leaks nothing.
struct Descriptors {
  std::vector<int> fds;
  ~Descriptors() {
    for (int fd : fds) close(fd);
  }
};

// Reads and drops whatever arrives on `fd` until the server ends the connection (true) or
// `deadline` passes (false).
bool EndsBy(int fd, Clock::time_point deadline) {
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
    if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  }
}

// Polls `done` every 10 ms until it holds or `deadline` passes.
template <typename Done>
bool PollUntil(Done done, Clock::time_point deadline) {
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

bool Logged(const std::vector<std::string>& log, std::mutex* mu, const std::string& part) {
  std::lock_guard<std::mutex> lock(*mu);
  return std::any_of(log.begin(), log.end(),
                     [&](const std::string& m) { return m.find(part) != std::string::npos; });
}

// The payload of a chunked body; `complete` says whether the last chunk came.
std::string Dechunk(const std::string& body, bool* complete) {
  std::string out;
  *complete = false;
  size_t at = 0;
  for (;;) {
    const size_t line_end = body.find("\r\n", at);
    if (line_end == std::string::npos) return out;
    const size_t size = std::stoul(body.substr(at, line_end - at), nullptr, 16);
    if (size == 0) {
      *complete = true;
      return out;
    }
    if (line_end + 2 + size + 2 > body.size()) return out;
    out.append(body, line_end + 2, size);
    at = line_end + 2 + size + 2;
  }
}

// Resident memory of this process, in bytes (VmRSS), or 0 when unknown.
size_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  }
  return 0;
}

// A client that asked for a stream and never reads, and a writer that keeps writing: what waits
// unsent never passes the bound; then Write returns false, the client-gone notice runs once,
// the connection is closed, and the server carries on.
TEST(HttpServerStreams, AStreamNotReadIsEndedAtItsUnsentBound) {
  constexpr size_t kBound = 256 * 1024;
  std::vector<std::string> log;
  std::mutex log_mu;
  Streams streams;
  std::unique_ptr<HttpServer> server =
      StartOrDie(StreamOptions(kBound, /*write_timeout_s=*/0), streams.Route(), &log, &log_mu);
  ASSERT_NE(server, nullptr);
  Descriptors client;
  client.fds.push_back(OpenStream(server->port()));
  ASSERT_GE(client.fds[0], 0);
  std::vector<Streams::Stream> handed = streams.WaitFor(1, Clock::now() + 10s);
  ASSERT_EQ(handed.size(), 1u);
  HttpExchange& exchange = *handed[0].exchange;

  const std::string event(4096, 'x');
  size_t written = 0;
  size_t most_unsent = 0;
  bool refused = false;
  // 256 MiB: far more than the kernel's buffers and the bound together.
  while (written < (size_t{256} << 20)) {
    if (!exchange.Write(event)) {
      refused = true;
      break;
    }
    written += event.size();
    most_unsent = std::max(most_unsent, exchange.unsent_bytes());
  }
  ASSERT_TRUE(refused) << "the stream took " << written << " bytes its client never read";
  EXPECT_LE(most_unsent, kBound);
  EXPECT_GT(most_unsent, kBound - event.size()) << "cut before the bound was reached";
  EXPECT_EQ(exchange.unsent_bytes(), 0u) << "what waited is dropped";
  EXPECT_FALSE(exchange.Write("late"));
  EXPECT_TRUE(PollUntil([&] { return handed[0].gone->load() > 0; }, Clock::now() + 10s))
      << "the client-gone notice did not run";
  EXPECT_TRUE(EndsBy(client.fds[0], Clock::now() + 10s)) << "the connection stayed open";
  EXPECT_TRUE(PollUntil([&] { return Logged(log, &log_mu, "bytes unsent"); }, Clock::now() + 5s));
  EXPECT_EQ(http_test::Get(server->port(), "/metrics").status, 200);
  server->Stop();
  EXPECT_EQ(handed[0].gone->load(), 1);
}

// A client that stops reading while the writer writes at a pace well under the bound per
// deadline: the kernel's buffers fill (a few MB on loopback), then nothing is taken for
// stream_write_timeout_s, and the stream is ended as a client that left, by the deadline and
// not the bound.
TEST(HttpServerStreams, AStalledReaderIsEndedAtTheWriteDeadline) {
  constexpr size_t kBound = size_t{8} << 20;
  std::vector<std::string> log;
  std::mutex log_mu;
  Streams streams;
  std::unique_ptr<HttpServer> server =
      StartOrDie(StreamOptions(kBound, /*write_timeout_s=*/1), streams.Route(), &log, &log_mu);
  ASSERT_NE(server, nullptr);
  Descriptors client;
  client.fds.push_back(OpenStream(server->port()));
  ASSERT_GE(client.fds[0], 0);
  std::vector<Streams::Stream> handed = streams.WaitFor(1, Clock::now() + 10s);
  ASSERT_EQ(handed.size(), 1u);
  HttpExchange& exchange = *handed[0].exchange;

  // 16 KiB every 10 ms, about 1.6 MB/s: what waits a deadline and a sweep is well under the
  // bound.
  const std::string event(16 * 1024, 'y');
  const auto begin = Clock::now();
  size_t most_unsent = 0;
  bool refused = false;
  while (Clock::now() - begin < 30s) {
    if (!exchange.Write(event)) {
      refused = true;
      break;
    }
    most_unsent = std::max(most_unsent, exchange.unsent_bytes());
    std::this_thread::sleep_for(10ms);  // the writer's pace
  }
  const auto ended_after = Clock::now() - begin;
  ASSERT_TRUE(refused) << "a client that read nothing for 30 s was not cut";
  EXPECT_LT(most_unsent, kBound) << "the bound, not the deadline, ended it";
  EXPECT_GE(ended_after, 1s);
  EXPECT_TRUE(PollUntil([&] { return handed[0].gone->load() > 0; }, Clock::now() + 10s));
  EXPECT_TRUE(EndsBy(client.fds[0], Clock::now() + 10s)) << "the connection stayed open";
  EXPECT_TRUE(
      PollUntil([&] { return Logged(log, &log_mu, "took no bytes for 1 s"); }, Clock::now() + 5s));
  EXPECT_FALSE(Logged(log, &log_mu, "bytes unsent"));
  std::printf("stalled reader: cut after %lld ms, at most %zu bytes unsent\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(ended_after).count()),
              most_unsent);
}

// A client reading a quarter as fast as the writer writes, for four write deadlines: once the
// kernel's buffers are full bytes wait in the exchange, but some are taken every few tens of
// milliseconds, so it is never cut and gets every byte and the end of the stream.
TEST(HttpServerStreams, ASlowSteadyReaderIsNotCut) {
  std::vector<std::string> log;
  std::mutex log_mu;
  Streams streams;
  std::unique_ptr<HttpServer> server = StartOrDie(
      StreamOptions(size_t{16} << 20, /*write_timeout_s=*/1), streams.Route(), &log, &log_mu);
  ASSERT_NE(server, nullptr);
  Descriptors client;
  client.fds.push_back(OpenStream(server->port()));
  const int fd = client.fds[0];
  ASSERT_GE(fd, 0);
  std::vector<Streams::Stream> handed = streams.WaitFor(1, Clock::now() + 10s);
  ASSERT_EQ(handed.size(), 1u);
  std::shared_ptr<HttpExchange> exchange = handed[0].exchange;

  // The writer: 16 KiB every 10 ms (about 1.6 MB/s) for 4 s, each event numbered.
  constexpr auto kWriting = 4s;
  std::string sent;
  std::atomic<bool> all_accepted{true};
  std::thread writer([&] {
    const auto begin = Clock::now();
    for (int i = 0; Clock::now() - begin < kWriting; ++i) {
      std::string event = "data: " + std::to_string(i) + " ";
      event.resize(16 * 1024, 'z');
      sent += event;
      if (!exchange->Write(std::move(event))) all_accepted = false;
      std::this_thread::sleep_for(10ms);  // the writer's pace
    }
    exchange->End();
  });
  // The reader: at most 4 KiB every 10 ms (about 400 KB/s) while the writer writes, then
  // everything that is left.
  std::string raw;
  const auto begin = Clock::now();
  bool ended = false;
  size_t most_unsent = 0;
  while (!ended && Clock::now() - begin < 60s) {
    const bool slow = Clock::now() - begin < kWriting;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char chunk[65536];
      const ssize_t got = recv(fd, chunk, slow ? 4096 : sizeof chunk, MSG_DONTWAIT);
      if (got > 0) {
        raw.append(chunk, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        ended = true;
      }
    }
    ended = ended || raw.ends_with("\r\n0\r\n\r\n");
    most_unsent = std::max(most_unsent, exchange->unsent_bytes());
    if (slow) std::this_thread::sleep_for(10ms);  // the reader's pace
  }
  writer.join();
  EXPECT_TRUE(all_accepted.load()) << "a Write was refused";
  EXPECT_EQ(handed[0].gone->load(), 0) << "the client was taken for gone";
  EXPECT_FALSE(Logged(log, &log_mu, "took no bytes"));
  EXPECT_GT(most_unsent, 0u) << "nothing ever waited: the reader was not slower than the writer";
  const size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << raw.substr(0, 200);
  EXPECT_EQ(raw.substr(0, 15), "HTTP/1.1 200 OK");
  bool complete = false;
  const std::string payload = Dechunk(raw.substr(head_end + 4), &complete);
  EXPECT_TRUE(complete) << "the end of the stream did not arrive";
  EXPECT_EQ(payload.size(), sent.size());
  EXPECT_TRUE(payload == sent) << "the stream arrived altered";
  std::printf("slow reader: %zu bytes, at most %zu unsent\n", payload.size(), most_unsent);
}

// Fifty clients that ask for a stream and never read, a writer writing to each in turn until
// every stream is refused: the server never holds more than 50 times the bound unsent, every
// stream ends as a client that left, every connection closes, and scrapes are answered.
// Resident memory is printed, not checked (it moves with the allocator); the server's own
// account of unsent bytes is what is held.
TEST(HttpServerStreams, FiftyStreamsNotReadHoldAtMostTheirBoundEach) {
  constexpr size_t kStreams = 50;
  constexpr size_t kBound = size_t{1} << 20;
  Streams streams;
  std::unique_ptr<HttpServer> server =
      StartOrDie(StreamOptions(kBound, /*write_timeout_s=*/0), streams.Route());
  ASSERT_NE(server, nullptr);
  Descriptors clients;
  for (size_t i = 0; i < kStreams; ++i) {
    clients.fds.push_back(OpenStream(server->port()));
    ASSERT_GE(clients.fds.back(), 0);
  }
  std::vector<Streams::Stream> handed = streams.WaitFor(kStreams, Clock::now() + 20s);
  ASSERT_EQ(handed.size(), kStreams);

  const size_t resident_before = ResidentBytes();
  size_t resident_most = resident_before;
  const std::string event(16 * 1024, 'w');
  std::vector<size_t> written(kStreams, 0);
  std::vector<bool> refused(kStreams, false);
  size_t most_total_unsent = 0;
  size_t open = kStreams;
  // Each stream is written at most 256 MiB: far past the kernel's buffers and the bound.
  for (int round = 0; open > 0 && round < 16384; ++round) {
    for (size_t i = 0; i < kStreams; ++i) {
      if (refused[i]) continue;
      if (!handed[i].exchange->Write(event)) {
        refused[i] = true;
        --open;
        continue;
      }
      written[i] += event.size();
    }
    size_t total_unsent = 0;
    for (const Streams::Stream& s : handed) total_unsent += s.exchange->unsent_bytes();
    most_total_unsent = std::max(most_total_unsent, total_unsent);
    if (round % 16 == 0) resident_most = std::max(resident_most, ResidentBytes());
  }
  ASSERT_EQ(open, 0u) << "streams still taking bytes their clients never read";
  EXPECT_LE(most_total_unsent, kStreams * kBound);
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(PollUntil([&] { return handed[i].gone->load() > 0; }, Clock::now() + 10s))
        << "stream " << i;
    EXPECT_TRUE(EndsBy(clients.fds[i], Clock::now() + 10s)) << "connection " << i;
  }
  EXPECT_EQ(http_test::Get(server->port(), "/metrics").status, 200);
  size_t total_written = 0;
  for (size_t w : written) total_written += w;
  std::printf(
      "%zu streams not read: %zu MiB written in all, at most %zu MiB unsent at once, resident "
      "memory +%zu MiB at most\n",
      kStreams, total_written >> 20, most_total_unsent >> 20,
      (resident_most - std::min(resident_most, resident_before)) >> 20);
}

TEST(HttpServerStreams, StartRefusesStreamLimitsOutOfRange) {
  Streams streams;
  HttpServerOptions no_room = StreamOptions(0, 30);
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat) { return std::string(); };
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(no_room, handlers);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("max_stream_unsent_bytes"), std::string::npos);
  HttpServerOptions too_long = StreamOptions(1024, 86401);
  server = HttpServer::Start(too_long, handlers);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("stream_write_timeout_s"), std::string::npos);
}

}  // namespace
}  // namespace vmetrics
