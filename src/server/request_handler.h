// SPDX-License-Identifier: Apache-2.0
// File: request_handler.h (internal to src/server)
//
// What the HTTP server answers, kept apart from libmicrohttpd: a request head goes in, a Reply
// comes out (BuildReply), and only ReadRequestHead and QueueReply touch the connection. The
// routing and status rules are documented in include/vmetrics/http_server.h; this file
// implements them. Everything but those two can run without a socket, which is how
// fuzz/http_request_fuzz.cc drives it.
//
// Thread safety: BuildReply and QueueReply are called on worker threads concurrently; they
// share nothing but the handlers, which must be thread-safe (http_server.h), and the
// BasicAuthVerifier, which is.
#ifndef VMETRICS_SERVER_REQUEST_HANDLER_H_
#define VMETRICS_SERVER_REQUEST_HANDLER_H_

#include <microhttpd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_key.h"
#include "basic_auth.h"
#include "body_shelf.h"
#include "route_table.h"
#include "vmetrics/http_server.h"

namespace vmetrics::internal {

// The paths the server serves itself; kNotFound for any other (which a route may serve).
enum class Endpoint : uint8_t { kMetrics, kHealth, kNotFound };

// RouteFor
//
// "/metrics" and "/metrics/" (the path of vLLM's mounted metrics app) are kMetrics, "/health"
// is kHealth, anything else kNotFound. `path` carries no query string: libmicrohttpd splits it
// off before the access handler runs.
//
// Example:
//   EXPECT_EQ(RouteFor("/metrics/"), Endpoint::kMetrics);
//   EXPECT_EQ(RouteFor("/metricsz"), Endpoint::kNotFound);
Endpoint RouteFor(std::string_view path);

// The parts of a request BuildReply looks at.
struct RequestHead {
  std::string_view path;           // without the query string
  std::string_view method;         // as sent, case-sensitive ("get" is not GET)
  std::string_view version;        // "HTTP/1.1" or "HTTP/1.0"; anything else is answered 400
  size_t header_count = 0;         // header lines, repeated names counted each time
  bool empty_header_name = false;  // a line like ": value", which libmicrohttpd lets through
  bool has_body = false;           // Transfer-Encoding, or a Content-Length other than 0
  std::string accept;              // every Accept header, joined with "," (prometheus_client does)
  std::string accept_encoding;     // every Accept-Encoding header, joined with ","
  std::string_view authorization;  // the last Authorization header's value
  size_t authorization_count = 0;  // Authorization header lines; only exactly one can pass
  size_t host_count = 0;           // Host header lines: HTTP/1.1 needs one, none may have two
  bool transfer_encoding = false;  // a Transfer-Encoding header: the body's length is not given
  bool content_length_valid = false;      // a Content-Length header of digits only (the last one)
  uint64_t content_length = 0;            // its value, when valid
  bool expect_continue = false;           // `Expect: 100-continue` (any case)
  size_t content_length_count = 0;        // Content-Length header lines
  bool content_length_malformed = false;  // a Content-Length that is not digits only
  bool invalid_header_name = false;       // a name with a byte outside RFC 9110's token characters
  bool folded_header = false;             // an obs-folded line (set by ReadRequestHead)
  bool bad_target = false;  // control bytes in the raw request target (TargetHasControlBytes)
};

// TargetHasControlBytes
//
// Whether a raw request target (as sent, before percent-decoding) holds a control byte or DEL:
// sent as it is (where RFC 9112 §3.2 allows no control byte, nor a space), or percent-encoded
// (%00-%1F, %7F; %20 is a space, which a query may carry). libmicrohttpd decodes the path into
// a C string, so "/abort_requests%00.png" would reach the handler of "/abort_requests".
//
// Example:
//   EXPECT_TRUE(TargetHasControlBytes("/v1/completions%00junk"));
//   EXPECT_FALSE(TargetHasControlBytes("/metrics?name=a%2Fb"));
bool TargetHasControlBytes(std::string_view raw_target);

// AddHeader
//
// Accounts one header line in `head`, as ReadRequestHead does for each line of a request:
// counts it, notes an empty name and a body (Transfer-Encoding, or Content-Length other than
// "0"), joins Accept and Accept-Encoding values with ",", keeps the Authorization value, counts
// Host lines, reads Content-Length and `Expect: 100-continue`. Names compare
// case-insensitively. `value` must outlive `head` (it may be kept as a view).
//
// Example:
//   RequestHead head;
//   AddHeader("accept", "text/plain", &head);
//   AddHeader("Accept", "application/openmetrics-text", &head);
//   EXPECT_EQ(head.accept, "text/plain,application/openmetrics-text");
void AddHeader(std::string_view name, std::string_view value, RequestHead* head);

// What to send back. Views point at static strings.
struct Reply {
  unsigned status = 200;
  std::string body;
  // When set, the body instead (a /metrics body from the BodyShelf, shared between replies).
  std::shared_ptr<const std::string> shared_body;
  std::string_view content_type;      // "" = no Content-Type header
  std::string_view content_encoding;  // "" or "gzip"
  std::string_view allow;             // the Allow header of a 405, else ""
  std::string_view www_authenticate;  // the challenge of a 401, else ""
  std::string_view retry_after;       // seconds, on a 429, else ""
  std::string_view cache_control;     // "no-cache" on a stream, else ""
  bool close = false;  // `Connection: close`: libmicrohttpd closes once the reply is sent
};

// RequestRules
//
// What a request must pass before a handler runs, from HttpServerOptions and its WebConfig.
struct RequestRules {
  unsigned max_headers = 100;
  // nullptr: no credentials asked for. Otherwise every request, whatever its path, needs
  // exactly one Authorization header with Basic credentials the verifier accepts.
  const BasicAuthVerifier* basic_auth = nullptr;
  // The application's routes (HttpHandlers::routes); nullptr = none.
  const RouteTable* routes = nullptr;
  // HttpServerOptions::api_keys; nullptr = none. A guarded path needs exactly one
  // Authorization header with a Bearer key it accepts.
  const ApiKeyCheck* api_keys = nullptr;
};

// RejectMalformed
//
// The first checks of RejectReply: no HTTP/1.x version, a header line without a name or with a
// name that is not a token, an obs-folded header line (RFC 9112 §5.2), control bytes in the
// request target, an HTTP/1.1 request without Host or any request with two Host lines
// (RFC 9112 §3.2), more than one Content-Length line, a Content-Length that is not digits only,
// or one beside Transfer-Encoding (RFC 9112 §6.3: the framing would be ambiguous) are 400 with
// `Connection: close` (Reply::close): whatever a client sent after such a head is not read as
// another request. More than rules.max_headers header lines is 431. nullopt when all pass.
std::optional<Reply> RejectMalformed(const RequestRules& rules, const RequestHead& head);

// BodyRefusal: why a route's request is refused before its body is read.
struct BodyRefusal {
  unsigned status = 0;  // 411 or 417
  std::string message;  // for the route's error_reply
};

// RejectRouteBody
//
// Checked once a request is known to go to a route whose body limit is `max_body_bytes`,
// before any of its body is read:
//   - a Transfer-Encoding body is 411 (Length Required). libmicrohttpd 0.9.75 answers a chunk
//     line longer than its read buffer (a 100 kB chunk extension) with its own 500 and gives
//     the application no say, and a body of unknown length cannot be checked against the limit
//     before it is read. Every OpenAI client library and curl send Content-Length.
//   - `Expect: 100-continue` with a Content-Length above the limit is 417 (Expectation
//     Failed): the client is told now, instead of being invited to send a body that would be
//     refused (libmicrohttpd would answer `100 Continue`).
// nullopt otherwise. A Content-Length above the limit without the expectation is read and
// answered 413 once read (http_server.h): answered before, the client would still be sending
// and could see the connection reset instead of the answer.
//
// Example:
//   RequestHead head;
//   head.expect_continue = true;
//   head.content_length_valid = true;
//   head.content_length = 1 << 30;
//   EXPECT_EQ(RejectRouteBody(head, 1 << 20)->status, 417u);
std::optional<BodyRefusal> RejectRouteBody(const RequestHead& head, size_t max_body_bytes);

// The part of the credentials check that needs no bcrypt.
enum class CredentialsOutcome : uint8_t {
  kAccepted,           // no users configured, or credentials that passed a check before
  kRefused,            // not exactly one Authorization header, not Basic credentials, or
                       // credentials that failed a recent check (BasicAuthVerifier::Lookup)
  kNeedsVerification,  // well-formed credentials the verifier does not know: run Verify
};
struct CredentialsCheck {
  CredentialsOutcome outcome = CredentialsOutcome::kAccepted;
  BasicCredentials credentials;  // set for kNeedsVerification
};

// CheckCredentialsQuickly
//
// Reads the Authorization header and consults what the verifier remembers (successes and
// recent failures), costing at most one HMAC, so a server thread can call it inline and hand
// only kNeedsVerification to a thread where a bcrypt may run (verification_queue.h).
//
// Example:
//   EXPECT_EQ(CheckCredentialsQuickly({}, head).outcome, CredentialsOutcome::kAccepted);
CredentialsCheck CheckCredentialsQuickly(const RequestRules& rules, const RequestHead& head);

// RejectUnrouted
//
// The last checks of RejectReply: with rules.api_keys, a guarded path without exactly one
// Authorization header carrying an accepted Bearer key (401 with vLLM's body
// {"error":"Unauthorized"}, before the path is looked up, as vLLM's middleware runs before its
// router); then a path neither the server's own nor a route's (404), a method other than GET or
// HEAD on /metrics and /health, or none of a route path's methods (405, with Allow: the path's
// methods). nullopt when all pass. The one-argument form has no routes and no keys.
std::optional<Reply> RejectUnrouted(const RequestRules& rules, const RequestHead& head);
std::optional<Reply> RejectUnrouted(const RequestHead& head);

// FindRoute
//
// The route an admitted request goes to (RejectUnrouted passed), or nullptr for /metrics and
// /health, which HandlerReply answers.
const HttpRoute* FindRoute(const RequestRules& rules, const RequestHead& head);

// The fixed replies of refused credentials: 401 with the challenge; 429 with Retry-After when
// the verification queue has no place; 503 when the server stopped before the check ran.
Reply UnauthorizedReply();
Reply TooManyRequestsReply();
Reply ServiceUnavailableReply();
// 503 with `Retry-After: 1` for a request other than /metrics and /health on a connection of
// the scrape reserve (connection_guard.h): the server is full of busy connections.
Reply ScrapeReserveReply();

// RejectReply
//
// The reply for a request refused before any handler runs, in this order: no HTTP/1.x version
// or a header line without a name (400), more than `rules.max_headers` header lines (431),
// missing or wrong credentials when rules.basic_auth is set (401, with WWW-Authenticate), an
// unknown path (404), a method the path does not have (405). nullopt when a handler should
// answer. Credentials come before the path so that without them every path looks the same.
// It is RejectMalformed, CheckCredentialsQuickly (plus Verify when needed), RejectUnrouted.
// May run one bcrypt (see basic_auth.h) on the calling thread; the server uses the three
// parts instead, to run the bcrypt elsewhere.
//
// Example:
//   EXPECT_EQ(RejectReply({}, {.path = "/nope", .method = "GET", .version = "HTTP/1.1"})
//                 ->status, 404u);
std::optional<Reply> RejectReply(const RequestRules& rules, const RequestHead& head);

// HandlerReply
//
// The handler's reply for an admitted request: /metrics rendered in the negotiated format
// (gzip-compressed when accepted), /health as HttpHandlers::health reports. Never throws: a
// handler's exception becomes a 500 (reported through handlers.log when set). A route's
// request is answered on an HttpExchange instead (http_server.cc); here it gets a 404.
// `bodies` (may be null: every scrape renders its own) bounds the /metrics bodies held
// (body_shelf.h).
// REQUIRES: RejectReply returned nullopt for `head`.
Reply HandlerReply(const HttpHandlers& handlers, const RequestHead& head,
                   BodyShelf* bodies = nullptr);

// BuildReply
//
// RejectReply's reply if there is one, else HandlerReply's (so a route's request, which has
// no reply of its own here, gets 404).
//
// Example:
//   Reply r = BuildReply(handlers, {}, {.path = "/nope", .method = "GET", .version = "HTTP/1.1"});
//   EXPECT_EQ(r.status, 404u);
Reply BuildReply(const HttpHandlers& handlers, const RequestRules& rules, const RequestHead& head);

// ReadRequestHead
//
// Gathers the RequestHead of the request on `connection` in one pass over its headers.
// `path`, `method` and `version` must outlive the returned value.
RequestHead ReadRequestHead(MHD_Connection* connection, const char* path, const char* method,
                            const char* version);

// QueueReply
//
// Hands `reply` to libmicrohttpd without copying the body (the response owns it until sent),
// with `extra_headers` (a web config's http_server_config.headers) after its own.
// For HEAD, libmicrohttpd sends the headers, including the body's Content-Length, and no body.
// Returns MHD_NO when the response cannot be created or queued; libmicrohttpd then closes the
// connection.
MHD_Result QueueReply(MHD_Connection* connection, Reply reply,
                      const std::vector<std::pair<std::string, std::string>>& extra_headers);

// QueueStream
//
// Queues a 200 whose body libmicrohttpd pulls from `exchange` (HttpExchange::ReadStream), sent
// chunked, with `content_type`, `Cache-Control: no-cache` and `extra_headers`. The response
// keeps the exchange alive until it is destroyed.
MHD_Result QueueStream(MHD_Connection* connection, std::shared_ptr<HttpExchange> exchange,
                       std::string_view content_type,
                       const std::vector<std::pair<std::string, std::string>>& extra_headers);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_REQUEST_HANDLER_H_
