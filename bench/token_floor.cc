// SPDX-License-Identifier: Apache-2.0
// vmetrics_bench_token_floor: the floor of the token APIs (bench/README.md, "Token APIs against
// their floor"). The HTTP server `vmetrics serve` runs (HttpServer, with the options
// bench/serve_apis.py gives serve) answers POST /v1/completions and POST
// /inference/v1/generate with one streamed chunk of `--tokens` token ids and [DONE] (for a body
// with `"stream":false`, one JSON answer of those ids), after one ZeroMQ round trip per
// request: a DEALER of the worker thread to the `echo` process's ROUTER over ipc://, as serve
// reaches its engines. A request of `vmetrics serve` costs what this costs plus vmetrics'
// request path (parsing, the EngineCoreRequest, the outputs, the recording, one SSE chunk per
// token when streamed).
//
// With STEP_MS above 0 a stream is paced instead, as an engine paces it: a thread writes one
// chunk of one token to every open stream each STEP_MS milliseconds (an engine step), then
// [DONE] after the last token. That floor has serve's number of chunks and their spacing: what
// the HTTP server spends per chunk is in it, vmetrics' request path is not.
//
//   vmetrics_bench_token_floor echo ADDRESS            # the other end, its own process
//   vmetrics_bench_token_floor serve ADDRESS PORT MAX_CONNECTIONS MAX_PER_ADDRESS TOKENS
//                              [STEP_MS]
//
// Both run until SIGTERM or SIGINT.
#include <zmq.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "vmetrics/http_server.h"

namespace {

using vmetrics::HttpExchange;
using vmetrics::HttpRequest;

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// The echo: every message back to its sender, until the context is terminated.
int Echo(const char* address) {
  void* context = zmq_ctx_new();
  void* router = zmq_socket(context, ZMQ_ROUTER);
  if (zmq_bind(router, address) != 0) {
    std::fprintf(stderr, "echo: cannot bind %s: %s\n", address, zmq_strerror(zmq_errno()));
    return 1;
  }
  // The signals end the process; the loop itself never returns.
  for (;;) {
    zmq_msg_t identity;
    zmq_msg_t body;
    zmq_msg_init(&identity);
    zmq_msg_init(&body);
    if (zmq_msg_recv(&identity, router, 0) < 0 || zmq_msg_recv(&body, router, 0) < 0) break;
    zmq_msg_send(&identity, router, ZMQ_SNDMORE);
    zmq_msg_send(&body, router, 0);
  }
  zmq_close(router);
  zmq_ctx_term(context);
  return 0;
}

// One DEALER per HTTP worker thread (ZeroMQ sockets are not thread-safe), connected on first
// use and kept for the thread's life.
struct WorkerSocket {
  void* socket = nullptr;
  ~WorkerSocket() {
    if (socket != nullptr) zmq_close(socket);
  }
};

// The engine of a paced floor: every step, one token to each open stream.
class Pacer {
 public:
  Pacer(std::chrono::milliseconds step, int tokens)
      : step_(step), tokens_(tokens), thread_([this] { Run(); }) {}
  ~Pacer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Add(std::shared_ptr<HttpExchange> exchange) {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back({std::move(exchange), tokens_});
  }

 private:
  struct Stream {
    std::shared_ptr<HttpExchange> exchange;
    int left = 0;
  };
  void Run() {
    const std::string chunk = R"(data: {"choices":[{"index":0,"token_ids":[1]}]})"
                              "\n\n";
    auto next = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      next += step_;
      // A step's clock, not a synchronisation: the streams are written whatever happens.
      cv_.wait_until(lock, next, [this] { return stop_; });
      std::vector<Stream> open;
      for (Stream& s : streams_) {
        s.exchange->Write(chunk);
        if (--s.left > 0) {
          open.push_back(std::move(s));
        } else {
          s.exchange->Write("data: [DONE]\n\n");
          s.exchange->End();
        }
      }
      streams_ = std::move(open);
    }
  }

  const std::chrono::milliseconds step_;
  const int tokens_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Stream> streams_;
  std::thread thread_;
};

int Serve(const char* address, int port, int max_connections, int max_per_address, int tokens,
          int step_ms) {
  std::unique_ptr<Pacer> pacer;
  if (step_ms > 0) pacer = std::make_unique<Pacer>(std::chrono::milliseconds(step_ms), tokens);
  void* context = zmq_ctx_new();
  std::string chunk = R"(data: {"choices":[{"index":0,"token_ids":[)";
  for (int i = 0; i < tokens; ++i) chunk += (i == 0 ? "" : ",") + std::to_string(i + 1);
  chunk += "]}]}\n\n";
  // The same choice as a whole answer: the chunk's JSON.
  const std::string whole = chunk.substr(6, chunk.size() - 8);
  auto answer = [context, address, chunk, whole, paced = pacer.get()](
                    const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) {
    thread_local WorkerSocket worker;
    if (worker.socket == nullptr) {
      worker.socket = zmq_socket(context, ZMQ_DEALER);
      const int linger = 0;  // nothing to deliver once the server stops
      zmq_setsockopt(worker.socket, ZMQ_LINGER, &linger, sizeof linger);
      zmq_connect(worker.socket, address);
    }
    // The request's body goes there and back, as an ADD goes out and its outputs come back.
    char reply[256];
    const bool ok = zmq_send(worker.socket, request.body.data(), request.body.size(), 0) >= 0 &&
                    zmq_recv(worker.socket, reply, sizeof reply, 0) >= 0;
    if (!ok) {
      exchange->Reply(503, "application/json", R"({"error":"echo"})");
      return;
    }
    if (request.body.find(R"("stream":false)") != std::string::npos) {
      exchange->Reply(200, "application/json", whole);
      return;
    }
    exchange->StartStream("text/event-stream");
    if (paced != nullptr) {
      paced->Add(exchange);
      return;
    }
    exchange->Write(chunk);
    exchange->Write("data: [DONE]\n\n");
    exchange->End();
  };
  vmetrics::HttpHandlers handlers;
  handlers.render_metrics = [](vmetrics::ExpositionFormat) { return std::string(); };
  handlers.health = [] { return vmetrics::HealthReport{}; };
  for (const char* path : {"/v1/completions", "/inference/v1/generate"}) {
    handlers.routes.push_back({.method = "POST", .path = path, .handler = answer});
  }
  vmetrics::HttpServerOptions options;
  options.port = static_cast<uint16_t>(port);
  options.max_connections = static_cast<size_t>(max_connections);
  options.max_connections_per_address = static_cast<size_t>(max_per_address);
  auto server = vmetrics::HttpServer::Start(options, std::move(handlers));
  if (!server.ok()) {
    std::fprintf(stderr, "serve: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const sigset_t stop = StopSignals();
  int signal = 0;
  sigwait(&stop, &signal);
  (*server)->Stop();
  server->reset();  // the worker threads' sockets close with them
  zmq_ctx_term(context);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Blocked before any thread starts, so that only sigwait (serve) or the default action
  // (echo, unblocked below) sees them.
  const sigset_t stop = StopSignals();
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  if (argc == 3 && std::string(argv[1]) == "echo") {
    pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
    return Echo(argv[2]);
  }
  if ((argc == 7 || argc == 8) && std::string(argv[1]) == "serve") {
    return Serve(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]),
                 std::atoi(argv[6]), argc == 8 ? std::atoi(argv[7]) : 0);
  }
  std::fprintf(stderr,
               "usage: %s echo ADDRESS | serve ADDRESS PORT MAX_CONNECTIONS MAX_PER_ADDRESS "
               "TOKENS [STEP_MS]\n",
               argv[0]);
  return 2;
}
