// SPDX-License-Identifier: Apache-2.0
// File: http_server.h
//
// HttpServer: the HTTP endpoint of a vmetrics frontend on libmicrohttpd. It serves `/metrics`
// and `/health` the way vLLM's Python frontend does, and the application's own routes
// (HttpRoute: a method, a path and a handler that answers on an HttpExchange, whole or
// streamed; http_route.h declares them); over TLS and behind basic authentication when
// HttpServerOptions::web_config asks for them (web_config.h). The server knows HTTP, not the
// API behind the routes: the OpenAI completions API of `vmetrics serve` is a route its
// frontend registers (frontend.h).
//
//   GET|HEAD /metrics   200, the exposition chosen by Negotiate(Accept, Accept-Encoding):
//                       text 0.0.4 or OpenMetrics 1.0.0, gzip-compressed when accepted.
//                       Repeated Accept headers are joined with "," (prometheus_client does).
//                       `/metrics/` and any query string (`/metrics?x=1`) are the same route.
//   GET|HEAD /health    200 when HttpHandlers::health reports healthy, 503 otherwise.
//   a route             the method and path of an HttpHandlers::routes entry (the query string
//                       does not count): the body (at most the route's max_body_bytes, else a
//                       413 the route words) goes to the route's handler, which answers on an
//                       HttpExchange, at once or later, whole or streamed. Another method on a
//                       route's path is 405 with `Allow:` the methods its routes have.
//   other methods       405 with `Allow: GET, HEAD` on /metrics and /health;
//                       bodies of 404 and 405 are FastAPI's JSON, as from vLLM.
//   other paths         404.
//   API keys            with HttpServerOptions::api_keys, 401 {"error":"Unauthorized"} for a
//                       guarded path without the Bearer key, before 404 and 405.
//   malformed requests  400 for a request line without an HTTP/1.x version, a header line
//                       without a name or whose name is not a token, an obs-folded header
//                       line, a control byte in the target (raw or percent-encoded: %00-%1F,
//                       %7F), an HTTP/1.1 request without Host or any request with two Host
//                       lines, two Content-Length lines, one not of digits only, or one beside
//                       Transfer-Encoding (RFC 9112 §3.2, §5.2, §6.3); each of these 400s
//                       carries `Connection: close` and ends the connection. 431 for more than
//                       max_headers header lines or a head above max_request_bytes, 414 for a
//                       URI above it. libmicrohttpd closes the connection on a request line it
//                       cannot parse at all, and answers a first Content-Length it cannot read
//                       itself (400, its head written twice: docs/reliability.md §1.6).
//   route bodies        411 for a body sent with Transfer-Encoding (chunked): a route's body
//                       needs a Content-Length; 417 for `Expect: 100-continue` with a
//                       Content-Length above the route's limit (no `100 Continue` is sent);
//                       413 for a body above the limit sent without the expectation (once
//                       read). All worded by the route's error_reply.
//   scrape reserve      503 with `Retry-After: 1` for any request but /metrics and /health on
//                       a connection admitted into the scrape reserve (HttpServerOptions).
//   no credentials      401 with `WWW-Authenticate: Basic realm="vmetrics"` on every path
//                       (known or not, before 404 and 405) when the web config has users and
//                       the request lacks exactly one Authorization header with matching Basic
//                       credentials. Checked after 400 and 431. 429 with `Retry-After: 1`
//                       when max_pending_auth_checks checks already wait for bcrypt; 503 for
//                       a check cancelled by Stop.
//   handler throws      500 (a route's worded by its error_reply); the server keeps serving.
//
// Every reply the server builds (not libmicrohttpd's own, such as 505) carries the web
// config's http_server_config.headers.
//
// Connections are kept alive between requests (Prometheus reuses its scrape connection),
// except after a refusal above or a GET of /metrics or /health that carries a body, which close
// the connection so the server never reads a body nobody wants.
//
// What a client may cost is bounded (HttpServerOptions, docs/reliability.md): connections in
// all and per address, with idle or unfinished ones making room for new ones and a reserve
// kept for scrapes; a deadline for sending a request and for reading a reply that sending a
// byte at a time cannot stretch; connections of clients that reset or closed them are closed
// at once; at most max_rendered_bodies /metrics bodies of each format and encoding are held,
// scrapes past that sharing the newest; a stream holds at most max_stream_unsent_bytes its
// client has not taken, and ends when its client takes nothing for stream_write_timeout_s;
// bcrypt checks are shared fairly between client addresses, those recently denied last; each
// kind of error is logged once per interval with a count.
//
// The server owns no metrics: it calls the handlers it is given, on its own worker threads,
// once per request. Rendering therefore happens on a worker thread, and a slow scrape holds up
// only the connections that share its worker, never recording.
//
// Thread safety: Start, port and Stop may be called from any thread, but not concurrently with
// each other on the same server, and never from inside a handler (Stop waits for the handlers
// to return). The handlers are called concurrently from up to `threads` worker threads and
// must be safe for that.
//
// Example:
//   HttpHandlers handlers;
//   handlers.render_metrics = [&](ExpositionFormat f) {
//     std::string text;
//     (f == ExpositionFormat::kOpenMetrics ? WriteOpenMetrics : WriteText)(registry, {}, &text);
//     return text;
//   };
//   handlers.health = [] { return HealthReport{true, ""}; };
//   handlers.routes.push_back({.method = "GET", .path = "/ping",
//                              .handler = [](HttpRequest, std::shared_ptr<HttpExchange> ex) {
//                                ex->Reply(200, "application/json", "{}");
//                              }});
//   HttpServerOptions options;
//   options.port = 0;  // ephemeral
//   Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, handlers);
//   ASSERT_TRUE(server.ok()) << server.status().ToString();
//   uint16_t port = (*server)->port();  // accepting connections from here on
//   (*server)->Stop();
#ifndef VMETRICS_HTTP_SERVER_H_
#define VMETRICS_HTTP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/exposition.h"
#include "vmetrics/http_route.h"
#include "vmetrics/status.h"
#include "vmetrics/web_config.h"

namespace vmetrics {

namespace internal {
struct HttpServerState;  // defined in src/server/http_server.cc
}  // namespace internal

// HttpServerOptions
//
// Where to listen and how much a client may ask of the server. The defaults suit one
// frontend scraped by a handful of Prometheus servers.
struct HttpServerOptions {
  // ---- Where to listen ----

  // Address to bind: an IPv4 literal ("127.0.0.1", "0.0.0.0"), an IPv6 literal ("::1"; "::"
  // also accepts IPv4 on a dual-stack host) or a host name, resolved with getaddrinfo; the
  // first resolved address that binds wins. "" binds every interface. Default: loopback only
  // (docs/design.md §8), so nothing is exposed until asked; use "0.0.0.0" or "::" for a scraper
  // on another host.
  std::string host = "127.0.0.1";

  // TCP port. 0 picks a free ephemeral port; HttpServer::port() tells which.
  uint16_t port = 8000;

  // ---- Performance ----

  // Worker threads, each with its own epoll loop (poll where epoll is missing). Each worker
  // accepts and serves whole connections and renders on its own thread, so this is also how
  // many scrapes render at once; a slow render stalls only its own worker's connections.
  // More threads cost a stack each and buy nothing beyond the number of cores. Must be >= 1.
  unsigned threads = 2;

  // ---- Limits: what one client may cost ----

  // Connections open at once, across all workers (`--http-max-connections`). A new one past
  // it takes the place of the connection that has waited longest for a request (idle between
  // requests, or still sending its request line and headers), which is closed; a busy
  // connection is never closed for it. When every connection is busy, the new one goes to the
  // scrape reserve below, or is refused when that is full too. Must be >= threads.
  size_t max_connections = 1024;

  // Connections open at once from one client address (`--http-max-connections-per-address`;
  // the port does not count, and an IPv4 client of a "::" listener is its IPv4 address). A
  // new one past it takes the place of that address's connection waiting longest for a
  // request, as above. 0 = no limit. Half of max_connections by default: one address (a
  // client looping on connections, or a load balancer in front of many) cannot take the whole
  // server. Behind a load balancer or for a benchmark from one host, raise it (or set 0).
  size_t max_connections_per_address = 512;

  // Connections beyond max_connections kept for GET and HEAD of /metrics and /health, used
  // only when every other connection is busy (a route's requests waiting for engines, replies
  // being read): Prometheus can always scrape. Any other request on such a connection is
  // answered 503 with `Retry-After: 1`. 0 = no reserve.
  size_t scrape_reserve_connections = 16;

  // Of max_connections, kept for clients holding fewer than 4 connections: an address holding
  // 4 or more is admitted only while fewer than max_connections minus this are open (past
  // that, like a client of a full server), so a few addresses with many long requests cannot
  // take every connection from everyone else. At most a sixteenth of max_connections (64 of
  // the default 1,024); 0 = none.
  size_t light_client_reserve_connections = 64;

  // Seconds a client may take to send a whole request, counted from its first byte (request
  // line, headers and body), and to read a whole reply, counted from when it is ready
  // (`--http-request-timeout`); past either the connection is closed. A client sending or
  // reading one byte at a time cannot stretch it (unlike connection_timeout_s, which any byte
  // restarts). Not counted: the wait between requests of a keep-alive connection, the time a
  // route's handler takes to answer, and streams (stream_write_timeout_s bounds those). At most
  // 86400; 0 = no deadline.
  unsigned request_timeout_s = 10;

  // Seconds a connection may stay idle (including keep-alive between scrapes) before it is
  // closed. 0 disables the timeout (not recommended: idle clients then hold connections).
  unsigned connection_timeout_s = 30;

  // Per-connection memory for the request line and headers (libmicrohttpd's connection
  // memory pool). A request whose head does not fit is answered 431 (or 414 for a long URI)
  // and the connection closed. Must be >= 4096.
  size_t max_request_bytes = size_t{64} * 1024;

  // Header lines a request may carry; more are answered 431. Small headers can stay under
  // max_request_bytes in large numbers, so they are counted on their own.
  unsigned max_headers = 100;

  // With basic_auth_users: credentials checks that may wait for the server's one bcrypt
  // thread (beyond the one it is running). A request whose credentials are not cached finds
  // a place or is answered 429 with `Retry-After: 1` at once; cached credentials never wait.
  // At bcrypt cost 10 (about 0.1 s) the default is about two seconds of work. Must be >= 1.
  size_t max_pending_auth_checks = 16;

  // Bytes of request body a route's request may carry, unless the route sets its own
  // (HttpRoute::max_body_bytes); a larger body is answered 413 without reaching the handler,
  // and is not kept: the server holds at most this much per connection. 1 MiB holds a
  // completion prompt of well over 100k token ids.
  size_t max_body_bytes = 1 << 20;

  // Rendered /metrics bodies held at once for each format and encoding (`--http-max-rendered-
  // bodies`): while this many are held by replies not yet read whole, a scrape gets the newest
  // of them (at most request_timeout_s old) instead of a new render, so clients reading slowly
  // or not at all cannot make the server hold more copies of a large exposition. >= 1.
  size_t max_rendered_bodies = 4;

  // ---- Logging ----

  // Seconds during which messages of one kind (one libmicrohttpd call site, one kind of
  // closed connection, one kind of handler failure) after the first are only counted; the
  // count is logged with the first message when the interval is over, or at Stop. A client
  // sending bad requests by the thousand then costs a few lines, not a line each. 0 = every
  // message.
  unsigned error_log_interval_s = 10;

  // ---- Security ----

  // TLS, basic authentication and extra response headers (`--web-config-file`, read with
  // LoadWebConfig). nullopt, or a WebConfig without tls and users, serves plain HTTP to
  // anyone who can connect: fine on loopback, the default host, and nowhere else.
  //
  // With users, the first request with a given (user, password) costs one bcrypt (about
  // 0.1 s at cost 10) on a thread of its own while its connection waits, later ones a cache
  // look-up on the worker; wrong passwords are never cached. So guessing costs the server at
  // most one core and never holds up scrapes with cached credentials (see
  // src/server/basic_auth.h, verification_queue.h and docs/reliability.md). With TLS, the
  // handshake counts against connection_timeout_s like any other idle time.
  std::optional<WebConfig> web_config;

  // vLLM's --api-key: when not empty, a request whose path starts with one of
  // api_key_path_prefixes (every path when that is empty) must carry exactly one
  // `Authorization: Bearer <key>` header with one of these keys, compared in constant time as
  // SHA-256 digests; otherwise 401 with vLLM's body {"error":"Unauthorized"}, checked after
  // the web config's checks and before the path is looked up. OPTIONS needs no key, as in
  // vLLM. Keys must be non-empty, without control characters or blanks at either end, and
  // cannot be combined with the web config's basic_auth_users (both use Authorization).
  std::vector<std::string> api_keys;
  std::vector<std::string> api_key_path_prefixes;

  // ---- Limits on streams (a route's answer sent with HttpExchange::StartStream) ----

  // Bytes a stream may hold written by the application and not yet sent to its client
  // (`--http-max-stream-unsent-bytes`). A Write that would hold more ends the stream as if the
  // client had left: Write returns false, the client-gone callback runs, the connection is
  // closed. A client that reads keeps this near zero; one that stopped reading fills the
  // kernel's socket buffers first, then this. 1 MiB is thousands of completion events, so a
  // client that is merely slow is not cut by it; 100 streams that are not read hold at most
  // 100 MiB. Must be >= 1.
  size_t max_stream_unsent_bytes = size_t{1} << 20;

  // Seconds a stream's client may take no bytes while some wait for it
  // (`--http-stream-write-timeout`); past that the stream is ended as above. The time a stream
  // waits for its engine with nothing to send is not counted, nor is a client that takes
  // bytes, however slowly. At most 86400; 0 = no deadline.
  unsigned stream_write_timeout_s = 30;
};

// HttpRequestRecord
//
// One request as HttpHandlers::observe sees it once it is over, for HTTP request metrics
// (prometheus-fastapi-instrumentator's families in `vmetrics serve`). What a record says
// follows what that library's middleware measures inside vLLM's app: the request's
// Content-Length header, the reply's Content-Length header (none on a stream, which is sent
// chunked), and the time from the request's head being read to its reply's last byte being
// handed to the connection (a stream: to its end, or to the connection's end when the client
// leaves or the stream is cut).
struct HttpRequestRecord {
  std::string_view method;  // as sent
  std::string_view path;    // as sent, percent-decoded, without the query string
  // The path of the route that answered (HttpRoute::path, "/metrics", "/health"); "" when the
  // path and method matched none (the 404s and 405s).
  std::string_view route_path;
  // The status sent, 500 when the request ended before any reply was queued (the client left
  // while a route's answer waited).
  unsigned status = 0;
  uint64_t request_content_length = 0;   // 0 without a Content-Length header
  uint64_t response_content_length = 0;  // the whole reply's body bytes; 0 for a stream
  double duration_seconds = 0;
};

// HttpHandlers
//
// What the server calls. All are called on worker threads, possibly concurrently (see the
// thread-safety contract above). An exception escaping render_metrics, health or a route's
// handler is caught and answered with 500; one escaping log is dropped.
struct HttpHandlers {
  // Required. Returns the complete exposition in `format` (WriteText or WriteOpenMetrics
  // output). Called once per GET or HEAD of /metrics (HEAD needs its Content-Length); the
  // server compresses the result when the client accepts gzip.
  std::function<std::string(ExpositionFormat)> render_metrics;

  // Optional. Unset means always healthy with an empty body.
  std::function<HealthReport()> health;

  // Optional. The application's routes (see HttpRoute), checked by Start. An exception
  // escaping a route's handler is answered 500 (worded by its error_reply).
  std::vector<HttpRoute> routes;

  // Optional. Called once per request that reached routing, when it is over (completed, or
  // its connection closed), on the connection's worker thread: every request answered by a
  // route, /metrics, /health, or a 404 or 405. Not for requests refused before routing, as a
  // middleware outside vLLM's app refuses them: malformed ones (400, 431, 414), refused
  // credentials (401, 429; the API key's 401 too), the scrape reserve's 503, or
  // libmicrohttpd's own replies. Must be cheap (it runs between the requests of a connection)
  // and not throw (an exception is dropped).
  std::function<void(const HttpRequestRecord&)> observe;

  // Optional. Receives libmicrohttpd's own error messages (failed binds and accepts, protocol
  // errors of clients), handler exceptions and gzip failures, one message per call without a
  // trailing newline. Unset drops them; messages logged while Start is running are also
  // included in its error status.
  std::function<void(std::string_view)> log;
};

// HttpServer
//
// A running HTTP endpoint. Created only by Start, which returns once the socket is bound and
// listening; destroyed (or stopped) to shut it down. Not copyable or movable: the worker
// threads hold the address of its state.
class HttpServer {
 public:
  // Start
  //
  // Binds options.host:options.port, starts the worker threads and returns the running server;
  // from that moment connections are accepted and answered.
  //
  // Failure: kInvalidArgument, with the reason in the message, for an unset render_metrics,
  // an option out of range, a bad route (without a handler, with a method that is not an HTTP
  // token, a path that does not start with '/' or holds '?', '#' or a blank, a path the server
  // serves itself, a method and path another route has), a web_config that ValidateWebConfig
  // refuses (or that asks for TLS from a libmicrohttpd built without it), a host that does
  // not resolve, or when libmicrohttpd cannot start on any resolved address (port in use,
  // permission denied, address not local; its own messages are included). No thread or
  // socket is left behind on failure.
  //
  // Ownership: the returned server owns the handlers (moved in) and its threads.
  //
  // Example:
  //   HttpServerOptions options;
  //   options.port = 0;
  //   auto server = HttpServer::Start(options, {.render_metrics = [](ExpositionFormat) {
  //     return std::string("up 1.0\n"); }});
  //   ASSERT_TRUE(server.ok());
  //   EXPECT_NE((*server)->port(), 0);
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                   HttpHandlers handlers);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Stops the server (see Stop).
  ~HttpServer();

  // port
  //
  // The port the server is bound to: options.port, or the one the kernel chose for port 0.
  // Still valid after Stop.
  //
  // Example:
  //   EXPECT_EQ((*server)->port(), options.port);  // when options.port != 0
  uint16_t port() const;

  // Stop
  //
  // Closes the listening socket and every connection, waits for running handlers to return
  // and joins the worker threads. Idempotent; the destructor calls it. Must not be called from
  // a handler (it would wait for itself).
  //
  // Example:
  //   (*server)->Stop();
  //   (*server)->Stop();  // no-op
  void Stop();

 private:
  explicit HttpServer(std::unique_ptr<internal::HttpServerState> state);

  // Options, handlers and the libmicrohttpd daemon, at a fixed address because the worker
  // threads hold a pointer to it.
  std::unique_ptr<internal::HttpServerState> state_;
};

}  // namespace vmetrics

#endif  // VMETRICS_HTTP_SERVER_H_
