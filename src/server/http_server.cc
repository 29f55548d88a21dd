// SPDX-License-Identifier: Apache-2.0
// HttpServer lifecycle: option checks, address resolution, starting and stopping the
// libmicrohttpd daemon. What each request gets is in request_handler.cc.
#include "vmetrics/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "basic_auth.h"
#include "body_shelf.h"
#include "client_watcher.h"
#include "connection_guard.h"
#include "error_log.h"
#include "peer_address.h"
#include "request_handler.h"
#include "route_table.h"
#include "verification_queue.h"
#include "vmetrics/web_config.h"

namespace vmetrics {

namespace internal {

struct HttpServerState {
  HttpServerOptions options;
  HttpHandlers handlers;
  MHD_Daemon* daemon = nullptr;
  uint16_t port = 0;

  // From options.web_config: the credentials check and the thread its bcrypts run on (both
  // null without users; declared in this order so the queue goes first), the limits and
  // check every request passes, the headers every reply carries, and the GnuTLS priority
  // string for the TLS versions allowed ("" without TLS).
  std::unique_ptr<BasicAuthVerifier> basic_auth;
  std::unique_ptr<VerificationQueue> verifications;
  // From options.api_keys; null without keys.
  std::unique_ptr<internal::ApiKeyCheck> api_keys;
  // handlers.routes, indexed; `rules` points at it.
  RouteTable routes;
  RequestRules rules;
  std::vector<std::pair<std::string, std::string>> extra_headers;
  std::string tls_priorities;

  // libmicrohttpd may log from its worker threads while MHD_start_daemon is still running, so
  // the start log is guarded.
  std::mutex log_mu;
  bool starting = false;
  std::string start_log;

  // Every error message goes through error_log, which writes each kind once per interval to
  // the caller's handlers.log (error_log.h); `guard` keeps the account of every connection
  // (connection_guard.h). Both live until the state goes; the guard's thread is joined by
  // Stop, after the daemon.
  std::unique_ptr<ErrorLog> error_log;
  std::unique_ptr<ConnectionGuard> guard;
  // The /metrics bodies held by replies (body_shelf.h).
  std::unique_ptr<BodyShelf> bodies;

  // The exchanges handed to route handlers, with their routes, so Stop can answer or cut every
  // one before libmicrohttpd stops (a suspended connection must be resumed first). Once
  // `stopping`, a new exchange is answered 503 at once instead of being suspended.
  std::mutex exchanges_mu;
  bool stopping = false;
  std::vector<std::pair<std::weak_ptr<HttpExchange>, const HttpRoute*>> exchanges;
  // Watches the sockets of exchanges waiting for a non-streamed answer for the client's
  // hang-up (client_watcher.h); null without routes, and once stopping. Guarded by
  // exchanges_mu.
  std::unique_ptr<ClientWatcher> client_watcher;
};

}  // namespace internal

namespace {

using internal::BasicCredentials;
using internal::ConnectionGuard;
using internal::HttpServerState;
using internal::Verdict;

// MHD_KeyValueIterator for HttpRequest::query. libmicrohttpd has decoded '+' and %XX already;
// a parameter without '=' comes with a null value.
MHD_Result CollectQueryParameter(void* cls, MHD_ValueKind /*kind*/, const char* key,
                                 const char* value) {
  auto* query = static_cast<std::vector<std::pair<std::string, std::string>>*>(cls);
  if (key != nullptr) query->emplace_back(key, value != nullptr ? value : "");
  return MHD_YES;
}

// Smallest per-connection memory pool accepted: below this libmicrohttpd cannot hold an
// ordinary scrape request (Prometheus sends about 300 bytes of headers) plus its own response
// header buffer.
constexpr size_t kMinRequestBytes = 4096;

// Largest max_connections (and scrape reserve): libmicrohttpd's limit, an unsigned, is twice
// their sum (see StartDaemon).
constexpr size_t kMaxConnections = UINT_MAX / 4;

// A day: a longer request deadline is no deadline.
constexpr unsigned kMaxTimeoutSeconds = 86400;

// How often the connection guard sweeps (deadlines hold to within this).
constexpr auto kSweepInterval = std::chrono::milliseconds(200);

// MHD_LogCallback: formats one message and passes it on.
void LogFromMhd(void* cls, const char* format, va_list args) {
  auto* state = static_cast<HttpServerState*>(cls);
  char small[256];
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(small, sizeof small, format, copy);
  va_end(copy);
  if (length < 0) return;
  std::string message;
  if (static_cast<size_t>(length) < sizeof small) {
    message.assign(small, static_cast<size_t>(length));
  } else {
    message.resize(static_cast<size_t>(length) + 1);
    std::vsnprintf(message.data(), message.size(), format, args);
    message.resize(static_cast<size_t>(length));
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
    message.pop_back();
  }
  {
    std::lock_guard<std::mutex> lock(state->log_mu);
    if (state->starting) {
      if (!state->start_log.empty()) state->start_log += "; ";
      state->start_log += message;
    }
  }
  // The format names the call site, so it is the kind: one line per interval whatever the
  // numbers in it (ErrorLog never throws into libmicrohttpd).
  state->error_log->Log(format, message);
}

// `kind` is the message without what varies (the exception's text).
void LogHandlerFailure(HttpServerState* state, std::string_view kind, const std::string& message) {
  state->error_log->Log(kind, message);
}

// The request a connection is serving, as HttpHandlers::observe will be told of it. A
// connection serves one request at a time, and every call about it runs on the connection's
// worker thread, so it needs no lock; the strings keep their capacity from one request of a
// keep-alive connection to the next.
struct ObservedRequest {
  bool routed = false;  // reached routing (HttpHandlers::observe): reported when it ends
  std::string method;
  std::string path;
  std::string_view route_path;  // a route's own path, "/metrics", "/health" or ""
  std::chrono::steady_clock::time_point start;
  uint64_t request_content_length = 0;
  unsigned status = 0;  // of the reply queued; 0 while none is
  uint64_t response_content_length = 0;
};

// What libmicrohttpd's socket context holds for a connection: its account (connection_guard.h)
// and the request it serves.
struct ConnectionSlot {
  ConnectionGuard::Connection* account = nullptr;
  ObservedRequest request;
};

ConnectionSlot* Slot(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info != nullptr ? static_cast<ConnectionSlot*>(info->socket_context) : nullptr;
}

ConnectionGuard::Connection* Account(MHD_Connection* connection) {
  ConnectionSlot* slot = Slot(connection);
  return slot != nullptr ? slot->account : nullptr;
}

// A request's head is in: what it asks for is noted, not yet reported (BeginObserving
// happens before the checks; AdmitObserved once they let it reach routing).
void BeginObserving(const HttpServerState* state, MHD_Connection* connection,
                    const internal::RequestHead& head) {
  if (!state->handlers.observe) return;
  ConnectionSlot* slot = Slot(connection);
  if (slot == nullptr) return;
  ObservedRequest& r = slot->request;
  r.routed = false;
  r.method.assign(head.method);
  r.path.assign(head.path);
  r.route_path = {};
  r.start = std::chrono::steady_clock::now();
  r.request_content_length = head.content_length_valid ? head.content_length : 0;
  r.status = 0;
  r.response_content_length = 0;
}

// The request passed the checks that run before routing; `refusal` is RejectUnrouted's answer.
// Its 401 is the API key's, which vLLM checks in a middleware outside the instrumented app, so
// that request is not reported; a 404 or 405 is the router's, inside it.
void AdmitObserved(const HttpServerState* state, MHD_Connection* connection,
                   const internal::RequestHead& head,
                   const std::optional<internal::Reply>& refusal) {
  if (!state->handlers.observe) return;
  ConnectionSlot* slot = Slot(connection);
  if (slot == nullptr) return;
  ObservedRequest& r = slot->request;
  if (refusal.has_value()) {
    r.routed = refusal->status != MHD_HTTP_UNAUTHORIZED;
    r.route_path = {};
    return;
  }
  r.routed = true;
  if (const HttpRoute* route = internal::FindRoute(state->rules, head)) {
    r.route_path = route->path;
  } else {
    r.route_path =
        internal::RouteFor(head.path) == internal::Endpoint::kMetrics ? "/metrics" : "/health";
  }
}

// A reply was queued for the connection's request: its status and Content-Length.
void NoteQueued(MHD_Connection* connection, unsigned status, uint64_t content_length) {
  if (ConnectionSlot* slot = Slot(connection)) {
    slot->request.status = status;
    slot->request.response_content_length = content_length;
  }
}

// The connection's request is over: reported when it reached routing.
void EndObserving(const HttpServerState* state, MHD_Connection* connection) {
  ConnectionSlot* slot = Slot(connection);
  if (slot == nullptr || !slot->request.routed) return;
  ObservedRequest& r = slot->request;
  r.routed = false;
  HttpRequestRecord record;
  record.method = r.method;
  record.path = r.path;
  record.route_path = r.route_path;
  // As the instrumentator's middleware: a request whose reply never started is a 500. 499 is
  // the placeholder an exchange queues when its client left before any answer
  // (HttpExchange::ClientHungUp): no reply started either.
  record.status = r.status != 0 && r.status != 499 ? r.status : MHD_HTTP_INTERNAL_SERVER_ERROR;
  record.request_content_length = r.request_content_length;
  record.response_content_length = r.response_content_length;
  record.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
  try {
    state->handlers.observe(record);
  } catch (...) {
    // Documented not to throw; nothing may unwind into libmicrohttpd.
  }
}

// MHD_NotifyConnectionCallback: every connection opened and closed goes through the guard.
void ConnectionNotice(void* cls, MHD_Connection* connection, void** socket_context,
                      MHD_ConnectionNotificationCode code) {
  auto* state = static_cast<HttpServerState*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* fd =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    const MHD_ConnectionInfo* peer =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    auto* slot = new ConnectionSlot;
    slot->account = state->guard->Opened(fd != nullptr ? fd->connect_fd : -1,
                                         peer != nullptr ? peer->client_addr : nullptr);
    *socket_context = slot;
  } else if (*socket_context != nullptr) {
    auto* slot = static_cast<ConnectionSlot*>(*socket_context);
    state->guard->Closed(slot->account);
    delete slot;
    *socket_context = nullptr;
  }
}

// internal::QueueReply and QueueStream, telling the guard that the reply is being written
// (timed) or streamed (not).
MHD_Result QueueReply(HttpServerState* state, MHD_Connection* connection, internal::Reply reply) {
  NoteQueued(connection, reply.status,
             reply.shared_body != nullptr ? reply.shared_body->size() : reply.body.size());
  const MHD_Result queued =
      internal::QueueReply(connection, std::move(reply), state->extra_headers);
  if (queued == MHD_YES) {
    if (ConnectionGuard::Connection* account = Account(connection)) {
      state->guard->Replying(account);
    }
  }
  return queued;
}

MHD_Result QueueStream(HttpServerState* state, MHD_Connection* connection,
                       std::shared_ptr<HttpExchange> exchange, std::string_view content_type) {
  std::weak_ptr<HttpExchange> stream = exchange;
  // Sent chunked: no Content-Length, which the instrumentator reads as 0.
  NoteQueued(connection, MHD_HTTP_OK, 0);
  const MHD_Result queued =
      internal::QueueStream(connection, std::move(exchange), content_type, state->extra_headers);
  if (queued == MHD_YES) {
    if (ConnectionGuard::Connection* account = Account(connection)) {
      state->guard->Streaming(account, std::move(stream));
    }
  }
  return queued;
}

// The reply the server gives on `route`'s behalf (413, 500, 503), worded by its error_reply.
HttpReply RouteError(const HttpRoute& route, unsigned status, std::string_view message) {
  if (route.error_reply) {
    try {
      return route.error_reply(status, message);
    } catch (...) {
      // Documented not to throw; if it does, the plain reply below still answers.
    }
  }
  return HttpReply{status, "text/plain; charset=utf-8", std::string(message)};
}

// Stored in *req_cls once a request's head has been accepted; only its address matters.
char head_accepted_tag;
// Stored in *req_cls by CheckTarget when the raw request target holds control bytes: the
// first call answers 400 (RejectMalformed).
char bad_target_tag;

// MHD_OPTION_URI_LOG_CALLBACK: the one place libmicrohttpd shows the request target as sent,
// before it percent-decodes the path into a C string (where "%00" would end it). What it
// returns becomes the request's *req_cls.
void* CheckTarget(void* /*cls*/, const char* uri, MHD_Connection* /*connection*/) {
  return uri != nullptr && internal::TargetHasControlBytes(uri) ? &bad_target_tag : nullptr;
}

// What *req_cls points to when a request needs state across calls; RequestCompleted frees it.
struct RequestContext {
  virtual ~RequestContext() = default;
};

// A request of a route: its body as it arrives, then the exchange it is answered on.
struct PostedRequest : RequestContext {
  PostedRequest(const HttpRoute* r, size_t limit) : route(r), max_body_bytes(limit) {}
  ~PostedRequest() override {
    if (exchange) exchange->Detach();
  }
  const HttpRoute* const route;
  const size_t max_body_bytes;
  std::string body;
  bool too_large = false;
  bool answered = false;  // a reply or stream was queued
  std::shared_ptr<HttpExchange> exchange;
};

// Stored in *req_cls instead while the request's credentials are checked on the verification
// queue, and until the request completes (RequestCompleted frees it).
struct PendingCheck : RequestContext {
  enum Outcome : uint8_t { kWaiting, kAllowed, kDenied, kQueueFull, kCancelled };
  explicit PendingCheck(MHD_Connection* c) : connection(c) {}
  MHD_Connection* const connection;
  // Written by the queue's thread before it resumes the connection, read by the worker after.
  std::atomic<Outcome> outcome{kWaiting};
  // Worker thread only: the request passed every check and waits for its last call, or was
  // answered.
  bool admitted = false;
  bool answered = false;
  // Set once a route's request passed the check: the rest goes to PostedCall.
  std::unique_ptr<PostedRequest> posted;
};

// A stream its client did not keep up with is logged when its request ends: cut by its unsent
// bound here (the guard logs its own write deadline).
void LogStreamCut(HttpServerState* state, MHD_Connection* connection,
                  const RequestContext& context) {
  const PostedRequest* posted = dynamic_cast<const PostedRequest*>(&context);
  if (const auto* pending = dynamic_cast<const PendingCheck*>(&context)) {
    posted = pending->posted.get();
  }
  if (posted == nullptr || posted->exchange == nullptr ||
      posted->exchange->cut() != HttpExchange::Cut::kUnsentBound) {
    return;
  }
  const MHD_ConnectionInfo* peer =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  state->error_log->Log(
      "stream unsent bound",
      "closed a stream to " +
          internal::DescribePeerAddressKey(
              internal::PeerAddressKey(peer != nullptr ? peer->client_addr : nullptr)) +
          ": its client left more than " + std::to_string(state->options.max_stream_unsent_bytes) +
          " bytes unsent");
}

// MHD_RequestCompletedCallback: frees a PendingCheck, whatever way the request ended, and tells
// the guard the connection waits for its next request. (libmicrohttpd calls it before it
// notifies the connection's close.)
void RequestCompleted(void* cls, MHD_Connection* connection, void** req_cls,
                      MHD_RequestTerminationCode /*code*/) {
  auto* state = static_cast<HttpServerState*>(cls);
  EndObserving(state, connection);
  if (ConnectionGuard::Connection* account = Account(connection)) {
    state->guard->RequestDone(account);
  }
  if (*req_cls != nullptr && *req_cls != &head_accepted_tag && *req_cls != &bad_target_tag) {
    auto* context = static_cast<RequestContext*>(*req_cls);
    LogStreamCut(state, connection, *context);
    delete context;
  }
  *req_cls = nullptr;
}

// Suspends `connection` and queues the bcrypt check of `credentials`; the queue's thread
// resumes it with the verdict, and libmicrohttpd then calls AccessHandler again (ResumedCall).
// Suspended first: resuming a connection that is not suspended is undefined.
MHD_Result SuspendForVerification(const HttpServerState* state, MHD_Connection* connection,
                                  BasicCredentials credentials, void** req_cls) {
  auto* pending = new PendingCheck(connection);
  *req_cls = pending;
  const MHD_ConnectionInfo* peer =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  // IPv6 clients take turns by /64 (peer_address.h).
  std::string client = internal::PeerNetworkKey(peer != nullptr ? peer->client_addr : nullptr);
  MHD_suspend_connection(connection);
  const bool queued = state->verifications->Submit(
      std::move(client), std::move(credentials), [pending](Verdict verdict) {
        MHD_Connection* const suspended = pending->connection;
        PendingCheck::Outcome outcome = PendingCheck::kCancelled;
        switch (verdict) {
          case Verdict::kAllowed:
            outcome = PendingCheck::kAllowed;
            break;
          case Verdict::kDenied:
            outcome = PendingCheck::kDenied;
            break;
          case Verdict::kShed:
            outcome = PendingCheck::kQueueFull;
            break;
          case Verdict::kCancelled:
            break;
        }
        pending->outcome.store(outcome, std::memory_order_release);
        // `pending` may be freed from here on.
        MHD_resume_connection(suspended);
      });
  if (!queued) {
    pending->outcome.store(PendingCheck::kQueueFull, std::memory_order_release);
    MHD_resume_connection(connection);
  }
  return MHD_YES;
}

size_t BodyLimit(const HttpServerState* state, const HttpRoute* route) {
  return route->max_body_bytes != 0 ? route->max_body_bytes : state->options.max_body_bytes;
}

// A route's request: a PostedRequest with the route's body limit.
std::unique_ptr<PostedRequest> NewPostedRequest(const HttpServerState* state,
                                                const HttpRoute* route) {
  return std::make_unique<PostedRequest>(route, BodyLimit(state, route));
}

// The reply `error` (a route's words for an error the server answers) as QueueReply takes it.
internal::Reply ToReply(HttpReply* error) {
  internal::Reply reply;
  reply.status = error->status;
  reply.body = std::move(error->body);
  reply.content_type = error->content_type;  // a view: `error` must outlive the QueueReply
  return reply;
}

// The first call of a route's request (its head is in, its body not yet): refused at once when
// its body cannot be taken (RejectRouteBody), else a PostedRequest gathers the body.
MHD_Result StartRouteRequest(HttpServerState* state, MHD_Connection* connection,
                             const internal::RequestHead& head, const HttpRoute* route,
                             std::unique_ptr<PostedRequest>* posted) {
  if (std::optional<internal::BodyRefusal> refusal =
          internal::RejectRouteBody(head, BodyLimit(state, route))) {
    HttpReply error = RouteError(*route, refusal->status, refusal->message);
    return QueueReply(state, connection, ToReply(&error));
  }
  *posted = NewPostedRequest(state, route);
  return MHD_YES;
}

// The calls of a route's request after its checks passed: body chunks are gathered (up to the
// route's limit; beyond, 413 on the last call); the last call hands the body to the route's
// handler with the connection suspended; the call after resumption queues the answer, whole
// or streamed.
MHD_Result PostedCall(HttpServerState* state, MHD_Connection* connection, const char* upload_data,
                      size_t* upload_data_size, PostedRequest* posted) {
  if (*upload_data_size != 0) {
    if (!posted->too_large) {
      if (posted->body.size() + *upload_data_size > posted->max_body_bytes) {
        posted->too_large = true;
        posted->body.clear();
        posted->body.shrink_to_fit();
      } else {
        posted->body.append(upload_data, *upload_data_size);
      }
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (posted->answered) return MHD_YES;
  const HttpRoute& route = *posted->route;
  if (posted->too_large) {
    posted->answered = true;
    HttpReply error =
        RouteError(route, MHD_HTTP_CONTENT_TOO_LARGE,
                   "request body larger than " + std::to_string(posted->max_body_bytes) + " bytes");
    return QueueReply(state, connection, ToReply(&error));
  }
  if (posted->exchange == nullptr) {
    posted->exchange =
        std::make_shared<HttpExchange>(connection, state->options.max_stream_unsent_bytes);
    bool stopping = false;
    {
      std::lock_guard<std::mutex> lock(state->exchanges_mu);
      stopping = state->stopping;
      if (!stopping) {
        std::erase_if(state->exchanges, [](const auto& e) { return e.first.expired(); });
        state->exchanges.emplace_back(posted->exchange, &route);
      }
    }
    if (stopping) {
      // Answered without suspending.
      posted->exchange->Cancel(
          RouteError(route, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is stopping"));
    } else {
      posted->exchange->SuspendUntilAnswered();
      // The answer is the engine's to give now, not the client's: not timed.
      if (ConnectionGuard::Connection* account = Account(connection)) {
        state->guard->AwaitingAnswer(account);
      }
      HttpRequest request{route.method, route.path, std::move(posted->body), {}};
      for (const std::string& name : route.request_headers) {
        // The first header of that name (case-insensitive), as Starlette's headers.get.
        const char* value = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name.c_str());
        if (value != nullptr) request.headers.emplace_back(name, value);
      }
      MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectQueryParameter,
                                &request.query);
      try {
        route.handler(std::move(request), posted->exchange);
      } catch (const std::exception& e) {
        LogHandlerFailure(state, "route handler threw",
                          "handler for " + route.method + " " + route.path + " threw: " + e.what());
        posted->exchange->Reply(RouteError(route, MHD_HTTP_INTERNAL_SERVER_ERROR, e.what()));
      } catch (...) {
        LogHandlerFailure(state, "route handler threw",
                          "handler for " + route.method + " " + route.path + " threw");
        posted->exchange->Reply(
            RouteError(route, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error"));
      }
      // Still waiting (not answered at once): watch for the client hanging up meanwhile.
      if (posted->exchange->WaitingSocket() >= 0) {
        std::lock_guard<std::mutex> lock(state->exchanges_mu);
        if (state->client_watcher != nullptr) state->client_watcher->Watch(posted->exchange);
      }
    }
  }
  // The handler may have answered already (the connection was resumed at once); otherwise
  // libmicrohttpd calls again once it does.
  unsigned status = 0;
  std::string content_type, body;
  switch (posted->exchange->TakeAnswer(&status, &content_type, &body)) {
    case HttpExchange::Phase::kWaiting:
      return MHD_YES;
    case HttpExchange::Phase::kReplied: {
      posted->answered = true;
      internal::Reply reply;
      reply.status = status;
      reply.body = std::move(body);
      reply.content_type = content_type;  // copied by QueueReply before `content_type` goes
      return QueueReply(state, connection, std::move(reply));
    }
    case HttpExchange::Phase::kStreaming:
      posted->answered = true;
      return QueueStream(state, connection, posted->exchange, content_type);
  }
  return MHD_NO;
}

// The calls after a verification. libmicrohttpd repeats the first call once the connection is
// resumed; from there on this mirrors AccessHandler's first and later calls: refusals and
// requests with a body are answered at once, the rest on the last call (answered earlier,
// libmicrohttpd 0.9.75 would close the keep-alive connection).
MHD_Result ResumedCall(HttpServerState* state, MHD_Connection* connection,
                       const internal::RequestHead& head, const char* upload_data,
                       size_t* upload_data_size, PendingCheck* pending) {
  if (pending->posted != nullptr) {
    return PostedCall(state, connection, upload_data, upload_data_size, pending->posted.get());
  }
  auto queue = [&](internal::Reply reply) {
    pending->answered = true;
    return QueueReply(state, connection, std::move(reply));
  };
  if (pending->answered || (pending->admitted && *upload_data_size != 0)) {
    // Body bytes: dropped (after an answer, libmicrohttpd closes the connection).
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (pending->admitted)
    return queue(internal::HandlerReply(state->handlers, head, state->bodies.get()));
  switch (pending->outcome.load(std::memory_order_acquire)) {
    case PendingCheck::kAllowed:
      break;
    case PendingCheck::kDenied:
      return queue(internal::UnauthorizedReply());
    case PendingCheck::kQueueFull:
      return queue(internal::TooManyRequestsReply());
    case PendingCheck::kWaiting:  // not resumed by the queue: should not happen
    case PendingCheck::kCancelled:
      return queue(internal::ServiceUnavailableReply());
  }
  std::optional<internal::Reply> refusal = internal::RejectUnrouted(state->rules, head);
  AdmitObserved(state, connection, head, refusal);
  if (refusal.has_value()) return queue(std::move(*refusal));
  if (const HttpRoute* route = internal::FindRoute(state->rules, head)) {
    // This is the repeated first call: the body (if any) comes in the calls after.
    const MHD_Result result = StartRouteRequest(state, connection, head, route, &pending->posted);
    if (pending->posted == nullptr) pending->answered = true;
    return result;
  }
  if (head.has_body)
    return queue(internal::HandlerReply(state->handlers, head, state->bodies.get()));
  pending->admitted = true;
  return MHD_YES;
}

// MHD_AccessHandlerCallback. libmicrohttpd calls it once the headers are in, then once per
// chunk of request body, then once more with no data when the request is complete.
//
// The checks (RejectReply's, in its order) run once, on the first call; *req_cls remembers
// that they passed. Credentials that need a bcrypt are handed to the verification queue with
// the connection suspended (SuspendForVerification), and the rest runs on the call after
// (ResumedCall); so does a request that has to wait. Refusals are queued on the first call:
// libmicrohttpd then closes the connection instead of reading a body nobody wants, whatever its
// size. A good request is answered on the last call: queued any earlier, libmicrohttpd 0.9.75
// cannot tell the request was fully read and closes the connection after the response, which would
// cost every Prometheus scrape a new TCP connection. The exception is a GET or HEAD announcing a
// body, answered at once for the same reason as a refusal.
MHD_Result AccessHandler(void* cls, MHD_Connection* connection, const char* url, const char* method,
                         const char* version, const char* upload_data, size_t* upload_data_size,
                         void** req_cls) {
  auto* state = static_cast<HttpServerState*>(cls);
  const bool bad_target = *req_cls == &bad_target_tag;
  if ((*req_cls == nullptr || bad_target) &&
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS) != nullptr) {
    // A reply is queued already (the 400 of a refused target, on the first call): a second
    // one would put a second status line on the wire. libmicrohttpd 0.9.75 skips the handler
    // itself after queueing one of its own error replies; this holds should it not.
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (bad_target) *req_cls = nullptr;  // a first call; the head says what was wrong
  if (*req_cls != nullptr && *req_cls != &head_accepted_tag) {
    auto* context = static_cast<RequestContext*>(*req_cls);
    if (auto* posted = dynamic_cast<PostedRequest*>(context)) {
      return PostedCall(state, connection, upload_data, upload_data_size, posted);
    }
    return ResumedCall(state, connection,
                       internal::ReadRequestHead(connection, url, method, version), upload_data,
                       upload_data_size, static_cast<PendingCheck*>(context));
  }
  // Read on each call rather than kept in *req_cls: it is a walk over a few headers, and
  // keeping it would need a completion callback to free it.
  internal::RequestHead head = internal::ReadRequestHead(connection, url, method, version);
  head.bad_target = bad_target;
  if (*req_cls == nullptr) {
    BeginObserving(state, connection, head);
    ConnectionGuard::Connection* account = Account(connection);
    if (account != nullptr) {
      state->guard->HeadReceived(account);
      // A connection of the scrape reserve (admitted when every other was busy) is for
      // Prometheus and health checks only.
      if (ConnectionGuard::ScrapeOnly(account) &&
          internal::RouteFor(head.path) == internal::Endpoint::kNotFound) {
        return QueueReply(state, connection, internal::ScrapeReserveReply());
      }
    }
    std::optional<internal::Reply> refusal = internal::RejectMalformed(state->rules, head);
    if (!refusal.has_value()) {
      internal::CredentialsCheck check = internal::CheckCredentialsQuickly(state->rules, head);
      if (check.outcome == internal::CredentialsOutcome::kNeedsVerification) {
        return SuspendForVerification(state, connection, std::move(check.credentials), req_cls);
      }
      if (check.outcome == internal::CredentialsOutcome::kRefused) {
        refusal = internal::UnauthorizedReply();
      } else {
        refusal = internal::RejectUnrouted(state->rules, head);
        AdmitObserved(state, connection, head, refusal);
      }
    }
    if (refusal.has_value()) return QueueReply(state, connection, std::move(*refusal));
    if (const HttpRoute* route = internal::FindRoute(state->rules, head)) {
      // The first call carries only the head; the body comes in the calls after.
      std::unique_ptr<PostedRequest> posted;
      const MHD_Result result = StartRouteRequest(state, connection, head, route, &posted);
      *req_cls = posted.release();  // null when refused: the refusal is queued
      return result;
    }
    if (!head.has_body) {
      *req_cls = &head_accepted_tag;
      return MHD_YES;
    }
  } else if (*upload_data_size != 0) {
    // Not reached (a request with a body is answered on the first call); discard regardless.
    *upload_data_size = 0;
    return MHD_YES;
  }
  return QueueReply(state, connection,
                    internal::HandlerReply(state->handlers, head, state->bodies.get()));
}

Status CheckOptions(const HttpServerOptions& options, const HttpHandlers& handlers) {
  if (!handlers.render_metrics) {
    return Status::InvalidArgument("HttpHandlers::render_metrics must be set");
  }
  if (options.threads == 0) {
    return Status::InvalidArgument("HttpServerOptions::threads must be >= 1");
  }
  if (options.max_connections < options.threads || options.max_connections > kMaxConnections) {
    return Status::InvalidArgument("HttpServerOptions::max_connections must be between threads (" +
                                   std::to_string(options.threads) + ") and " +
                                   std::to_string(kMaxConnections));
  }
  if (options.scrape_reserve_connections > kMaxConnections) {
    return Status::InvalidArgument(
        "HttpServerOptions::scrape_reserve_connections must be at most " +
        std::to_string(kMaxConnections));
  }
  if (options.request_timeout_s > kMaxTimeoutSeconds) {
    return Status::InvalidArgument("HttpServerOptions::request_timeout_s must be at most " +
                                   std::to_string(kMaxTimeoutSeconds));
  }
  if (options.max_rendered_bodies == 0) {
    return Status::InvalidArgument("HttpServerOptions::max_rendered_bodies must be >= 1");
  }
  if (options.max_stream_unsent_bytes == 0) {
    return Status::InvalidArgument("HttpServerOptions::max_stream_unsent_bytes must be >= 1");
  }
  if (options.stream_write_timeout_s > kMaxTimeoutSeconds) {
    return Status::InvalidArgument("HttpServerOptions::stream_write_timeout_s must be at most " +
                                   std::to_string(kMaxTimeoutSeconds));
  }
  if (options.max_pending_auth_checks == 0) {
    return Status::InvalidArgument("HttpServerOptions::max_pending_auth_checks must be >= 1");
  }
  if (options.max_body_bytes == 0) {
    return Status::InvalidArgument("HttpServerOptions::max_body_bytes must be >= 1");
  }
  for (const std::string& key : options.api_keys) {
    // Sent as `Authorization: Bearer <key>`: a header value, which cannot hold control bytes
    // and whose blanks at either end are not part of it.
    const bool usable =
        !key.empty() && key.front() != ' ' && key.front() != '\t' && key.back() != ' ' &&
        key.back() != '\t' &&
        std::none_of(key.begin(), key.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 && c != '\t'; }) &&
        key.find('\x7f') == std::string::npos;
    if (!usable) {
      return Status::InvalidArgument(
          "--api-key: a key must be non-empty, without control characters or blanks at either "
          "end");
    }
  }
  if (!options.api_keys.empty() && options.web_config.has_value() &&
      !options.web_config->basic_auth_users.empty()) {
    return Status::InvalidArgument(
        "--api-key and basic_auth_users in --web-config-file both need the Authorization "
        "header: use one of them");
  }
  if (Result<internal::RouteTable> routes = internal::RouteTable::Build(handlers.routes);
      !routes.ok()) {
    return routes.status();
  }
  if (options.max_request_bytes < kMinRequestBytes) {
    return Status::InvalidArgument("HttpServerOptions::max_request_bytes must be >= " +
                                   std::to_string(kMinRequestBytes));
  }
  if (options.web_config.has_value()) {
    if (Status s = ValidateWebConfig(*options.web_config); !s.ok()) {
      return Status::InvalidArgument("HttpServerOptions::web_config: " + s.message());
    }
    if (options.web_config->tls.has_value() &&
        MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      return Status::InvalidArgument(
          "HttpServerOptions::web_config asks for TLS, but this libmicrohttpd was built "
          "without it");
    }
  }
  return Status::Ok();
}

// GnuTLS's default choices, narrowed to the versions allowed. NORMAL already leaves out SSL 3;
// TLS 1.0 and 1.1 are left out too, as exporter-toolkit does by default.
std::string TlsPriorities(const TlsServerConfig& tls) {
  std::string priorities = "NORMAL:-VERS-ALL";
  if (tls.max_version >= TlsVersion::kTls13) priorities += ":+VERS-TLS1.3";
  if (tls.min_version <= TlsVersion::kTls12) priorities += ":+VERS-TLS1.2";
  return priorities;
}

// The addresses `host` resolves to, port filled in, in getaddrinfo's order (which follows
// RFC 6724 and /etc/gai.conf, so the preferred address is tried first).
Result<std::vector<sockaddr_storage>> ResolveHost(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  // AI_PASSIVE: an empty host means the wildcard addresses, as for a listening socket.
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string service = std::to_string(port);
  addrinfo* found = nullptr;
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc),
                                   StatusDetail::kHttpHost);
  }
  std::vector<sockaddr_storage> addresses;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
        ai->ai_addrlen > sizeof(sockaddr_storage)) {
      continue;
    }
    sockaddr_storage address{};
    std::memcpy(&address, ai->ai_addr, ai->ai_addrlen);
    addresses.push_back(address);
  }
  freeaddrinfo(found);
  if (addresses.empty()) {
    return Status::InvalidArgument("host '" + host + "' has no IPv4 or IPv6 address",
                                   StatusDetail::kHttpHost);
  }
  return addresses;
}

std::string DescribeAddress(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN + 8] = "?";
  getnameinfo(reinterpret_cast<const sockaddr*>(&address), sizeof address, text, sizeof text,
              nullptr, 0, NI_NUMERICHOST);
  return address.ss_family == AF_INET6 ? "[" + std::string(text) + "]" : std::string(text);
}

unsigned DaemonFlags(const sockaddr_storage& address, bool tls, bool suspend_resume) {
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (tls) flags |= MHD_USE_TLS;
  // For the credentials checks that run on the verification queue.
  if (suspend_resume) flags |= MHD_ALLOW_SUSPEND_RESUME;
  // ITC lets MHD_stop_daemon wake the workers at once instead of waiting for a poll timeout.
  flags |= MHD_USE_ITC;
  flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_AUTO;
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    // "::" should mean every address, IPv4 included, as it does for vLLM's uvicorn; MHD's
    // plain IPv6 flag would set IPV6_V6ONLY.
    flags |= IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
  }
  return flags;
}

uint16_t BoundPort(MHD_Daemon* daemon) {
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  if (info != nullptr && info->port != 0) return info->port;
  // Older builds leave BIND_PORT empty; ask the socket.
  info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
  if (info == nullptr) return 0;
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (getsockname(info->listen_fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  if (bound.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
}

// Starts the daemon on one address. Returns nullptr on failure, with MHD's reasons in
// state->start_log.
MHD_Daemon* StartDaemon(HttpServerState* state, const sockaddr_storage& address) {
  const HttpServerOptions& o = state->options;
  // A pool of one is no pool: MHD then runs the single polling thread itself.
  const unsigned pool_size = o.threads > 1 ? o.threads : 0;
  const TlsServerConfig* tls =
      o.web_config.has_value() && o.web_config->tls.has_value() ? &*o.web_config->tls : nullptr;
  // Options that take one pointer go in ptr_value. MHD reads the PEM text while starting; the
  // strings live in `state` for as long as the daemon anyway.
  auto text = [](const std::string& s) { return const_cast<char*>(s.c_str()); };
  MHD_OptionItem tls_options[] = {
      {MHD_OPTION_HTTPS_PRIORITIES, 0, text(state->tls_priorities)},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, tls != nullptr ? text(tls->key_pem) : nullptr},
      {MHD_OPTION_HTTPS_MEM_CERT, 0, tls != nullptr ? text(tls->cert_pem) : nullptr},
      {MHD_OPTION_END, 0, nullptr},
  };
  // Without TLS the array is empty: MHD refuses HTTPS options on a plain daemon.
  MHD_OptionItem* extra_options = tls != nullptr ? tls_options : tls_options + 3;
  // clang-format off
  return MHD_start_daemon(
      DaemonFlags(address, tls != nullptr,
                  state->verifications != nullptr || !state->routes.empty()),
      o.port,
      /*apc=*/nullptr, /*apc_cls=*/nullptr, &AccessHandler, state,
      // First, so no startup message goes to libmicrohttpd's own stderr logger.
      MHD_OPTION_EXTERNAL_LOGGER, &LogFromMhd, state,
      MHD_OPTION_NOTIFY_COMPLETED, &RequestCompleted, state,
      MHD_OPTION_NOTIFY_CONNECTION, &ConnectionNotice, state,
      MHD_OPTION_URI_LOG_CALLBACK, &CheckTarget, state,
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<const sockaddr*>(&address),
      MHD_OPTION_THREAD_POOL_SIZE, pool_size,
      // The guard keeps max_connections plus the scrape reserve; libmicrohttpd's own limit is
      // twice that, so connections the guard closed and libmicrohttpd has not freed yet never
      // make it stop accepting (a new connection waiting in the kernel's queue is what the
      // guard exists to prevent).
      MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned>(2 * (o.max_connections + o.scrape_reserve_connections)),
      MHD_OPTION_CONNECTION_TIMEOUT, o.connection_timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, o.max_request_bytes,
      // The guard applies max_connections_per_address instead: libmicrohttpd's limit would
      // refuse the new connection, even a scrape, where the guard closes an idle one.
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u,
      MHD_OPTION_ARRAY, extra_options,
      MHD_OPTION_END);
  // clang-format on
}

}  // namespace

HttpServer::HttpServer(std::unique_ptr<HttpServerState> state) : state_(std::move(state)) {}

HttpServer::~HttpServer() { Stop(); }

uint16_t HttpServer::port() const { return state_->port; }

void HttpServer::Stop() {
  if (state_->daemon == nullptr) return;
  // Every suspended connection must be resumed before MHD_stop_daemon: stopping the queue
  // cancels the waiting checks, and each cancelled one resumes its connection. A check
  // submitted after this finds the queue stopped and resumes its connection itself.
  if (state_->verifications != nullptr) state_->verifications->Stop();
  // Likewise every exchange still waiting or streaming: answered 503 or cut, and resumed.
  // No hang-up is acted on from here on: the watcher's thread is joined first.
  std::vector<std::pair<std::weak_ptr<HttpExchange>, const HttpRoute*>> exchanges;
  std::unique_ptr<internal::ClientWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(state_->exchanges_mu);
    state_->stopping = true;
    exchanges.swap(state_->exchanges);
    watcher = std::move(state_->client_watcher);
  }
  watcher.reset();
  for (const auto& [weak, route] : exchanges) {
    if (std::shared_ptr<HttpExchange> exchange = weak.lock()) {
      exchange->Cancel(RouteError(*route, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is stopping"));
    }
  }
  MHD_stop_daemon(state_->daemon);
  state_->daemon = nullptr;
  // Every connection is closed: the guard has nothing left to watch, and the counts of the
  // last interval are written now rather than lost.
  state_->guard.reset();
  state_->error_log->Flush(/*all=*/true);
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                      HttpHandlers handlers) {
  if (Status s = CheckOptions(options, handlers); !s.ok()) return s;
  Result<std::vector<sockaddr_storage>> addresses = ResolveHost(options.host, options.port);
  if (!addresses.ok()) return addresses.status();

  auto state = std::make_unique<HttpServerState>();
  state->options = std::move(options);
  state->handlers = std::move(handlers);
  state->rules.max_headers = state->options.max_headers;
  // Every message for the caller's log goes through the error log: libmicrohttpd's (by
  // LogFromMhd), and those HandlerReply writes through handlers.log, whose kind is the part
  // before ": " (what follows is the exception's text).
  state->error_log = std::make_unique<internal::ErrorLog>(
      std::move(state->handlers.log), std::chrono::seconds(state->options.error_log_interval_s));
  state->handlers.log = [log = state->error_log.get()](std::string_view message) {
    log->Log(message.substr(0, message.find(": ")), message);
  };
  internal::ConnectionLimits limits;
  limits.max_connections = state->options.max_connections;
  limits.max_per_address = state->options.max_connections_per_address;
  limits.scrape_reserve = state->options.scrape_reserve_connections;
  limits.light_reserve = std::min(state->options.light_client_reserve_connections,
                                  state->options.max_connections / 16);
  limits.request_timeout = std::chrono::seconds(state->options.request_timeout_s);
  limits.stream_write_timeout = std::chrono::seconds(state->options.stream_write_timeout_s);
  limits.sweep_interval = kSweepInterval;
  state->guard = std::make_unique<internal::ConnectionGuard>(limits, state->error_log.get());
  state->bodies = std::make_unique<internal::BodyShelf>(state->options.max_rendered_bodies);
  // Indexed from the state's own copy of the routes, whose addresses stay put.
  // CheckOptions built it once already, so this cannot fail.
  Result<internal::RouteTable> routes = internal::RouteTable::Build(state->handlers.routes);
  if (!routes.ok()) return routes.status();
  state->routes = std::move(*routes);
  if (!state->routes.empty()) {
    state->rules.routes = &state->routes;
    state->client_watcher = std::make_unique<internal::ClientWatcher>();
  }
  if (!state->options.api_keys.empty()) {
    state->api_keys = std::make_unique<internal::ApiKeyCheck>(state->options.api_keys,
                                                              state->options.api_key_path_prefixes);
    state->rules.api_keys = state->api_keys.get();
  }
  if (const std::optional<WebConfig>& web = state->options.web_config; web.has_value()) {
    if (!web->basic_auth_users.empty()) {
      state->basic_auth = std::make_unique<internal::BasicAuthVerifier>(web->basic_auth_users);
      state->verifications = std::make_unique<internal::VerificationQueue>(
          state->basic_auth.get(), state->options.max_pending_auth_checks);
      state->rules.basic_auth = state->basic_auth.get();
    }
    state->extra_headers = web->headers;
    if (web->tls.has_value()) state->tls_priorities = TlsPriorities(*web->tls);
  }
  std::string failures;
  for (const sockaddr_storage& address : *addresses) {
    {
      std::lock_guard<std::mutex> lock(state->log_mu);
      state->starting = true;
      state->start_log.clear();
    }
    MHD_Daemon* daemon = StartDaemon(state.get(), address);
    std::string log;
    {
      std::lock_guard<std::mutex> lock(state->log_mu);
      state->starting = false;
      log = std::move(state->start_log);
    }
    if (daemon != nullptr) {
      state->daemon = daemon;
      state->port = BoundPort(daemon);
      return std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
    }
    if (!failures.empty()) failures += "; ";
    failures += DescribeAddress(address) + ":" + std::to_string(state->options.port) + ": " +
                (log.empty() ? "libmicrohttpd could not start" : log);
  }
  return Status::InvalidArgument("cannot serve HTTP on '" + state->options.host + "' port " +
                                     std::to_string(state->options.port) + ": " + failures,
                                 StatusDetail::kHttpPort);
}

}  // namespace vmetrics
