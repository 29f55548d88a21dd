// SPDX-License-Identifier: Apache-2.0
// File: http_route.h
//
// The application's side of an HTTP route: HttpRoute (a method, a path and the handler that
// serves them), HttpRequest (what the handler gets), HttpExchange (where it answers, at once or
// later, whole or streamed) and HttpReply (one whole answer); with them HealthReport, what
// /health answers from and what routes that answer like it read (vLLM's /ping). HttpServer
// (http_server.h) serves the routes: it matches them, reads the body, calls the handler on a
// worker thread and sends what the exchange is given.
//
// These types live apart from the server so that code which declares routes or answers on an
// exchange (the token API) needs only this header and the standard library, not the server's
// options, the web config, the exposition and the registry that http_server.h brings in.
//
// Thread safety: HttpExchange may be called from any thread (see the class). HttpRoute,
// HttpRequest, HttpReply and HealthReport are plain values with no synchronisation of their
// own; a route's handler is called from the server's worker threads at once and must be safe
// for that.
//
// Example:
//   HttpRoute echo;
//   echo.method = "POST";
//   echo.path = "/echo";
//   echo.request_headers = {"X-Request-Id"};
//   echo.handler = [](HttpRequest request, std::shared_ptr<HttpExchange> ex) {
//     const std::string* id = request.header("X-Request-Id");
//     ex->Reply(HttpReply{200, "text/plain", id != nullptr ? *id : request.body});
//   };
//   EXPECT_TRUE(echo.handler);
#ifndef VMETRICS_HTTP_ROUTE_H_
#define VMETRICS_HTTP_ROUTE_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct MHD_Connection;  // libmicrohttpd's

namespace vmetrics {

// HttpReply: one whole answer: status, Content-Type ("" = none) and body.
struct HttpReply {
  unsigned status = 200;
  std::string content_type;
  std::string body;
};

// HttpExchange
//
// The answer to one request of a route (HttpRoute), given from any thread, at once or later: either
// one whole reply (Reply) or a 200 whose body is streamed (StartStream, Write..., End; sent
// chunked, as server-sent events need). The connection waits suspended meanwhile, costing the
// server no thread. Calls after the client went away, after the stream ended or after the server
// stopped do nothing (Write returns false).
//
// The client going away is noticed while the answer waits (the server watches the socket of a
// waiting exchange for the client's hang-up) and, once streaming, when the server next writes
// to it; then, or when the server stops before the answer is complete, the callback given to
// SetOnClientGone runs once, on a server thread.
//
// A stream's client that does not keep up is treated as one that left: when a Write would leave
// more than HttpServerOptions::max_stream_unsent_bytes written and not yet sent, or when the
// client has taken no bytes for stream_write_timeout_s while some wait for it, the stream is
// cut. That Write (and every later one) returns false, what waited is dropped, the connection
// is closed, and the client-gone callback runs once on a server thread (never inside Write,
// which may be called under the application's own locks). A stream therefore holds at most
// that many bytes of the server's memory however slowly its client reads.
//
// Thread safety: every method may be called from any thread.
//
// Example:
//   route.handler = [](HttpRequest request, std::shared_ptr<HttpExchange> ex) {
//     if (request.body.empty()) return ex->Reply(400, "application/json", R"({"error":"empty"})");
//     ex->StartStream("text/event-stream");
//     ex->Write("data: {}\n\n");
//     ex->End();
//   };
class HttpExchange {
 public:
  // `max_unsent_bytes`: the most a stream may hold written and not yet sent (see above); 0 =
  // no bound. The server passes HttpServerOptions::max_stream_unsent_bytes.
  explicit HttpExchange(MHD_Connection* connection, size_t max_unsent_bytes = 0)
      : connection_(connection), max_unsent_bytes_(max_unsent_bytes) {}
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  // The whole answer. Only the first Reply or StartStream counts.
  void Reply(unsigned status, std::string_view content_type, std::string body);
  void Reply(HttpReply reply) { Reply(reply.status, reply.content_type, std::move(reply.body)); }
  // Starts a 200 with this Content-Type whose body follows through Write.
  void StartStream(std::string_view content_type);
  // Appends to the stream. Returns false once the client is gone or the stream ended, and when
  // `data` would take what waits unsent past the bound (the stream is then cut: see above).
  bool Write(std::string data);
  // Ends the stream after what was written.
  void End();
  // What to do when the client goes away before the answer is complete (see above). Set it
  // before answering; it may run on any server thread, at most once.
  void SetOnClientGone(std::function<void()> on_client_gone);
  // Bytes given to Write that the server has not yet handed to the connection's socket; never
  // more than the bound. 0 once the stream is over.
  size_t unsent_bytes();

  // ---- For the server (src/server) only ----
  enum class Phase : uint8_t { kWaiting, kReplied, kStreaming };
  // Why a stream was cut short on its client's account.
  enum class Cut : uint8_t {
    kNone,
    kUnsentBound,  // a Write would have passed max_unsent_bytes
    kStalled,      // the client took no bytes for the write deadline (CutIfStalled)
  };
  // Suspends the connection until the answer starts; called before the handler runs.
  void SuspendUntilAnswered();
  // The connection's socket while the exchange waits for its answer, or for the first bytes of
  // a stream it started (a stream's later writes notice a hang-up themselves); -1 once
  // answered, detached, or when it never was suspended (the client watcher polls it).
  int WaitingSocket();
  // The client hung up on `socket` (the watcher saw it): if the exchange still waits on that
  // socket, the client-gone callback runs now and the connection is resumed (a stream is
  // ended), so that libmicrohttpd closes it. Otherwise nothing happens.
  void ClientHungUp(int socket);
  // The phase, and for kReplied the reply (moved out).
  Phase TakeAnswer(unsigned* status, std::string* content_type, std::string* body);
  // libmicrohttpd's content reader: copies up to `max` bytes of the stream into `buf`;
  // suspends the connection and returns 0 when nothing is ready yet; -1 at the end
  // (MHD_CONTENT_READER_END_OF_STREAM), -2 once cut (MHD_CONTENT_READER_END_WITH_ERROR: closed
  // without the last chunk, so the client can tell the body is incomplete).
  ssize_t ReadStream(char* buf, size_t max);
  // The server stops: a waiting exchange is answered `stopping` (the route's 503), a stream is
  // cut short.
  void Cancel(HttpReply stopping);
  // The write deadline of a stream: when bytes (or the stream's end, until the request
  // completes) have waited for the client since `before` or earlier with none taken since, the
  // stream is cut as a client that left (see above) and true is returned; otherwise nothing
  // happens. "Taken" here is libmicrohttpd's content reader (ReadStream) getting bytes, which
  // it asks for only once its own buffer went into the socket; the connection guard also
  // counts the kernel's acknowledged bytes, and asks only when those did not grow either.
  bool CutIfStalled(std::chrono::steady_clock::time_point before);
  // Why the stream was cut short on its client's account; kNone when it was not.
  Cut cut();
  // The request is over (completed or connection closed): forgets the connection and runs
  // the client-gone callback if the answer was not complete.
  void Detach();

 private:
  void ResumeLocked();
  // Ends the stream as a client that left: drops what waits, shuts the socket down so that
  // libmicrohttpd closes the connection (and Detach runs the client-gone callback).
  void CutLocked(Cut why);

  std::mutex mu_;
  MHD_Connection* connection_;     // nullptr once detached
  const size_t max_unsent_bytes_;  // 0 = no bound
  bool suspended_ = false;
  int socket_ = -1;  // the connection's socket, taken when it was suspended waiting
  Phase phase_ = Phase::kWaiting;
  unsigned status_ = 0;
  std::string content_type_;
  std::string body_;
  std::deque<std::string> chunks_;
  size_t chunk_offset_ = 0;  // bytes of chunks_.front() already sent
  size_t unsent_ = 0;        // bytes of chunks_ not yet sent
  // When what waits (unsent bytes, or the end) began to wait with nothing taken since.
  std::chrono::steady_clock::time_point waiting_since_{};
  Cut cut_ = Cut::kNone;
  bool ended_ = false;      // End() (or Cancel) was called
  bool cancelled_ = false;  // Cancel() cut the stream
  bool delivered_ = false;  // the end of the stream was handed to libmicrohttpd
  bool wrote_ = false;      // Write() was given bytes
  std::function<void()> on_client_gone_;
};

// HealthReport: what HttpHandlers::health returns. `healthy` selects 200 or 503; `body` is
// sent as text/plain when not empty (vLLM itself answers with an empty body).
struct HealthReport {
  bool healthy = true;
  std::string body;
};

// HttpRequest: what a route's handler gets. The method and path are views of the route's own
// (they matched exactly), valid for as long as the server; the body is the whole request
// body, moved in; `headers` the route's HttpRoute::request_headers that the request carries.
struct HttpRequest {
  std::string_view method;
  std::string_view path;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // (name as the route spells it, value)
  // The query string's parameters in order, decoded ('+' as a space, then %XX); a name may
  // come more than once, and one without '=' has the value "".
  std::vector<std::pair<std::string, std::string>> query;

  // The value of header `name` (as listed in request_headers), or nullptr.
  const std::string* header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return &v;
    }
    return nullptr;
  }
  // The last value of query parameter `name`, as Starlette's query_params.get, or nullptr.
  const std::string* query_value(std::string_view name) const {
    const std::string* found = nullptr;
    for (const auto& [n, v] : query) {
      if (n == name) found = &v;
    }
    return found;
  }
};

// HttpRoute
//
// One request the application serves: `method` on `path`, answered by `handler`. The server
// reads the whole body first (at most max_body_bytes), then calls the handler on a worker
// thread with the exchange to answer on; the handler must return promptly (no waiting for an
// engine) and may answer at once or later, from any thread, whole (HttpExchange::Reply) or
// streamed (StartStream, Write, End: server-sent events). A client that hangs up before the
// answer is complete is noticed (HttpExchange::SetOnClientGone). GET routes work the same way,
// with an empty body; HEAD is not added for them.
//
// The errors the server answers on the route's behalf — 413 for a body over the limit, 500
// for a handler that threw, 503 for a request waiting when the server stops — are worded by
// `error_reply`, so a JSON API answers them in its own error format.
//
// Example:
//   HttpRoute route;
//   route.method = "POST";
//   route.path = "/v1/completions";
//   route.handler = [&](HttpRequest r, std::shared_ptr<HttpExchange> ex) {
//     service.Handle(std::move(r.body), std::move(ex));
//   };
//   route.error_reply = [](unsigned status, std::string_view message) {
//     return HttpReply{status, "application/json", MyErrorJson(status, message)};
//   };
//   handlers.routes.push_back(std::move(route));
struct HttpRoute {
  // The request method, compared case-sensitively ("POST", "GET").
  std::string method;

  // The path, compared exactly, without the query string: it starts with '/' and holds no
  // '?'. Not /metrics, /metrics/ or /health, which the server serves itself. One path may
  // have several routes with different methods.
  std::string path;

  // Required. Called once per request, with the request and the exchange to answer on.
  std::function<void(HttpRequest request, std::shared_ptr<HttpExchange> exchange)> handler;

  // Bytes of body this route accepts; 0 = HttpServerOptions::max_body_bytes.
  size_t max_body_bytes = 0;

  // Request headers the handler reads (matched case-insensitively; the first of a repeated
  // header counts), handed over in HttpRequest::headers. Others are not copied.
  std::vector<std::string> request_headers;

  // Optional. The reply for an error the server answers for this route: `status` 413, 500 or
  // 503, and what happened in words ("request body larger than 1048576 bytes", the handler's
  // exception text, "the server is stopping"). Unset: a text/plain reply with the message.
  // Called on a server thread; must not throw.
  std::function<HttpReply(unsigned status, std::string_view message)> error_reply;
};

}  // namespace vmetrics

#endif  // VMETRICS_HTTP_ROUTE_H_
