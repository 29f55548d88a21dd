// SPDX-License-Identifier: Apache-2.0
// latency_bench: how long recording one message takes (StatsRecorder::Record of a decoded W1
// message: 64 NIXL transfers, 8 store records, 16 Mooncake P2P transfers) into the 64-engine
// W3 registry, p50/p99/p99.9 over every message, while nothing else runs and while the
// registry is scraped continuously:
//
//   /idle                  nothing else runs; the baseline the targets compare against
//   /render_threads_8      8 threads calling WriteText back to back (what /metrics does)
//   /http_clients_8        8 keep-alive clients GETting /metrics from a real HttpServer
//                          (2 worker threads, as `vmetrics serve` starts it)
//   /token_streams_64      token load: 64 bench-serve connections (tools/loadgen) streaming
//                          completions of 16 chunks each from a real HttpServer (2 worker
//                          threads), back to back (recording latency under token load)
//
// The `_pinned` variants put the recording thread alone on CPU 0 and every scraping thread on
// CPU 1, as a deployment that keeps the output loop on its own core would; `_serve_pinned`
// places them as bench/serve_apis.py places `vmetrics serve` (recorder and HTTP workers on CPU
// 0, the clients on CPU 1); the others let the kernel schedule all threads over both cores, so
// on a 2-core machine the recording thread also waits for CPU time. Record never waits for a lock a
// render holds (registry.h); what is left is cache-line traffic on the children both touch.
//
// Run:
//   cmake --build build-bench --target latency_bench && build-bench/bench/latency_bench
//
// Recorded result (2-core Intel Xeon (family 6 model 207) KVM guest, g++ 12.2 -O3, 2026-11-30; see
// bench/README.md):
//   BM_RecordLatency/idle                      p50 4.39 us  p99 5.16 us
//   BM_RecordLatency/render_threads_8          p50 4.55 us  p99 6.81 us
//   BM_RecordLatency/http_clients_8            p50 4.50 us  p99 6.22 us
//   BM_RecordLatency/http_clients_8_pinned     p50 4.42 us  p99 5.85 us
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>

#include "bench/workloads.h"
#include "loadgen/load_generator.h"
#include "vmetrics/exposition.h"
#include "vmetrics/http_server.h"
#include "vmetrics/recorder.h"

namespace vmetrics::bench {
namespace {

enum class Scrape { kNone, kRenderThreads, kHttpClients, kTokenStreams };

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void Unpin() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) CPU_SET(i, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// The 64-engine W3 registry plus the decoded W1 messages to record into it.
struct Fixture {
  Registry registry;
  std::unique_ptr<StatsRecorder> recorder;
  Workload w1;
  std::deque<EngineCoreOutputs> decoded;
  Fixture() : w1(LoadOrMake("w1")) {
    const Workload w3 = LoadOrMake("w3");
    recorder = std::make_unique<StatsRecorder>(&registry, RecorderOptionsFor(w3));
    EngineCoreOutputs out;
    for (const std::string& m : w3.messages) {
      std::string_view frames[] = {m};
      if (DecodeEngineCoreOutputs(frames, recorder->decode_context(0), &out).ok()) {
        recorder->Record(out);
      }
    }
    FeedRequestFamilies(&registry);
    decoded.resize(w1.messages.size());
    for (size_t i = 0; i < w1.messages.size(); ++i) {
      std::string_view frames[] = {w1.messages[i]};
      if (!DecodeEngineCoreOutputs(frames, recorder->decode_context(i), &decoded[i]).ok()) {
        std::fprintf(stderr, "latency_bench: W1 message %zu does not decode\n", i);
        std::exit(2);
      }
    }
  }
};

Fixture& Get() {
  static Fixture f;
  return f;
}

// One keep-alive HTTP/1.1 client GETting /metrics until `stop`.
void HttpClient(uint16_t port, const std::atomic<bool>* stop, std::atomic<uint64_t>* scrapes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n";
  std::string buf;
  std::vector<char> chunk(1 << 16);
  while (!stop->load(std::memory_order_relaxed)) {
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size()))
      break;
    buf.clear();
    size_t header_end = std::string::npos, need = 0;
    for (;;) {
      const ssize_t n = recv(fd, chunk.data(), chunk.size(), 0);
      if (n <= 0) {
        close(fd);
        return;
      }
      buf.append(chunk.data(), static_cast<size_t>(n));
      if (header_end == std::string::npos) {
        header_end = buf.find("\r\n\r\n");
        if (header_end == std::string::npos) continue;
        const size_t cl = buf.find("Content-Length: ");
        if (cl == std::string::npos || cl > header_end) {
          close(fd);
          return;
        }
        need = header_end + 4 + std::strtoull(buf.c_str() + cl + 16, nullptr, 10);
      }
      if (buf.size() >= need) break;
    }
    scrapes->fetch_add(1, std::memory_order_relaxed);
  }
  close(fd);
}

// Where the threads run: as the kernel places them; the recorder alone on CPU 0 and the rest
// on CPU 1; or as bench/serve_apis.py places `vmetrics serve` (the recorder and the HTTP
// server's workers on CPU 0, the clients on CPU 1).
enum class Placement { kFree, kRecorderAlone, kServe };

void BM_RecordLatency(benchmark::State& state, Scrape scrape, Placement placement) {
  Fixture& f = Get();
  const bool pinned = placement == Placement::kRecorderAlone;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> scrapes{0};
  std::vector<std::thread> threads;
  std::unique_ptr<HttpServer> server;
  if (pinned) PinTo(1);  // scraping threads (and the server's workers) inherit CPU 1
  if (scrape == Scrape::kRenderThreads) {
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          std::string out;
          WriteText(f.registry, {}, &out);
          benchmark::DoNotOptimize(out.data());
          scrapes.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
  } else if (scrape == Scrape::kHttpClients) {
    HttpServerOptions o;
    o.port = 0;
    HttpHandlers h;
    h.render_metrics = [&f](ExpositionFormat) {
      std::string out;
      WriteText(f.registry, {}, &out);
      return out;
    };
    Result<std::unique_ptr<HttpServer>> started = HttpServer::Start(o, std::move(h));
    if (!started.ok()) {
      state.SkipWithError(started.status().ToString().c_str());
      Unpin();
      return;
    }
    server = std::move(*started);
    for (int i = 0; i < 8; ++i) threads.emplace_back(HttpClient, server->port(), &stop, &scrapes);
  }
  std::unique_ptr<loadgen::LoadGenerator> load;
  if (scrape == Scrape::kTokenStreams) {
    HttpRoute completions;
    completions.method = "POST";
    completions.path = "/v1/completions";
    completions.handler = [](HttpRequest, std::shared_ptr<HttpExchange> exchange) {
      exchange->StartStream("text/event-stream");
      for (int token = 0; token < 16; ++token) {
        exchange->Write(R"(data: {"choices":[{"index":0,"token_ids":[7]}]})"
                        "\n\n");
      }
      exchange->Write("data: [DONE]\n\n");
      exchange->End();
    };
    HttpServerOptions o;
    o.port = 0;
    HttpHandlers h;
    h.render_metrics = [](ExpositionFormat) { return std::string(); };
    h.routes.push_back(std::move(completions));
    if (placement == Placement::kServe) PinTo(0);  // the workers inherit CPU 0
    Result<std::unique_ptr<HttpServer>> started = HttpServer::Start(o, std::move(h));
    if (placement == Placement::kServe) PinTo(1);  // the load's threads inherit CPU 1
    if (!started.ok()) {
      state.SkipWithError(started.status().ToString().c_str());
      Unpin();
      return;
    }
    server = std::move(*started);
    loadgen::LoadOptions lo;
    lo.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/v1/completions";
    lo.requests = 0;
    lo.duration_s = 3600;  // until RequestStop
    lo.concurrency = 64;
    lo.prompt_len_min = lo.prompt_len_max = 128;
    lo.max_tokens_min = lo.max_tokens_max = 16;
    load = std::make_unique<loadgen::LoadGenerator>(lo);
    threads.emplace_back([&load, &scrapes] {
      scrapes.store(load->Run().completed);  // requests, counted once the load stops
    });
  }
  if (pinned || placement == Placement::kServe) PinTo(0);
  // Let the scrapers get going before measuring.
  std::this_thread::sleep_for(std::chrono::milliseconds(scrape == Scrape::kNone ? 0 : 200));

  std::vector<double> ns;
  ns.reserve(1 << 20);
  size_t i = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t scrapes0 = scrapes.load();
  for (auto _ : state) {
    const EngineCoreOutputs& m = f.decoded[i++ % f.decoded.size()];
    const auto a = std::chrono::steady_clock::now();
    f.recorder->Record(m);
    const auto b = std::chrono::steady_clock::now();
    ns.push_back(
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop.store(true);
  if (load) load->RequestStop();
  if (load) threads.back().join();  // the load generator's report: its completed requests
  const uint64_t scraped = scrapes.load() - scrapes0;
  if (server) server->Stop();
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  Unpin();

  std::sort(ns.begin(), ns.end());
  auto pct = [&ns](double p) {
    return ns.empty() ? 0.0
                      : ns[std::min(ns.size() - 1,
                                    static_cast<size_t>(p * static_cast<double>(ns.size())))];
  };
  state.counters["p50_ns"] = pct(0.50);
  state.counters["p99_ns"] = pct(0.99);
  state.counters["p999_ns"] = pct(0.999);
  // /token_streams_*: requests completed per second.
  state.counters["scrapes_per_s"] = seconds > 0 ? static_cast<double>(scraped) / seconds : 0;
}

// Fixed iteration counts: the same number of samples in every mode (200 000 records, or
// $VMETRICS_BENCH_LATENCY_RECORDS; bench/compare --smoke uses fewer).
const int64_t kRecords = [] {
  const char* v = std::getenv("VMETRICS_BENCH_LATENCY_RECORDS");
  const int64_t n = v != nullptr ? std::atoll(v) : 0;
  return n > 0 ? n : int64_t{200000};
}();

BENCHMARK_CAPTURE(BM_RecordLatency, idle, Scrape::kNone, Placement::kFree)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, idle_pinned, Scrape::kNone, Placement::kRecorderAlone)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, render_threads_8, Scrape::kRenderThreads, Placement::kFree)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, render_threads_8_pinned, Scrape::kRenderThreads,
                  Placement::kRecorderAlone)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, http_clients_8, Scrape::kHttpClients, Placement::kFree)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, http_clients_8_pinned, Scrape::kHttpClients,
                  Placement::kRecorderAlone)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, token_streams_64, Scrape::kTokenStreams, Placement::kFree)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, token_streams_64_pinned, Scrape::kTokenStreams,
                  Placement::kRecorderAlone)
    ->Iterations(kRecords)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RecordLatency, token_streams_64_serve_pinned, Scrape::kTokenStreams,
                  Placement::kServe)
    ->Iterations(kRecords)
    ->UseRealTime();

}  // namespace
}  // namespace vmetrics::bench

BENCHMARK_MAIN();
