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
//   vmetrics_bench_token_floor echo ADDRESS            # the other end, its own process
//   vmetrics_bench_token_floor serve ADDRESS PORT MAX_CONNECTIONS MAX_PER_ADDRESS TOKENS
//
// Both run until SIGTERM or SIGINT.
#include <zmq.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

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

int Serve(const char* address, int port, int max_connections, int max_per_address, int tokens) {
  void* context = zmq_ctx_new();
  std::string chunk = R"(data: {"choices":[{"index":0,"token_ids":[)";
  for (int i = 0; i < tokens; ++i) chunk += (i == 0 ? "" : ",") + std::to_string(i + 1);
  chunk += "]}]}\n\n";
  // The same choice as a whole answer: the chunk's JSON.
  const std::string whole = chunk.substr(6, chunk.size() - 8);
  auto answer = [context, address, chunk, whole](const HttpRequest& request,
                                                 const std::shared_ptr<HttpExchange>& exchange) {
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
  if (argc == 7 && std::string(argv[1]) == "serve") {
    return Serve(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]),
                 std::atoi(argv[6]));
  }
  std::fprintf(stderr,
               "usage: %s echo ADDRESS | serve ADDRESS PORT MAX_CONNECTIONS MAX_PER_ADDRESS "
               "TOKENS\n",
               argv[0]);
  return 2;
}
