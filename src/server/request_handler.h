// File: request_handler.h (internal to src/server)
//
// What the HTTP server answers, kept apart from libmicrohttpd: a request head goes in, a Reply
// comes out (BuildReply), and only QueueReply touches the connection. The routing and status
// rules are documented in include/vmetrics/http_server.h; this file implements them.
//
// Thread safety: BuildReply and QueueReply are called on worker threads concurrently; they
// share nothing but the handlers, which must be thread-safe (http_server.h).
#ifndef VMETRICS_SERVER_REQUEST_HANDLER_H_
#define VMETRICS_SERVER_REQUEST_HANDLER_H_

#include <microhttpd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vmetrics/http_server.h"

namespace vmetrics::internal {

// The paths the server knows.
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
};

// What to send back. Views point at static strings.
struct Reply {
  unsigned status = 200;
  std::string body;
  std::string_view content_type;      // "" = no Content-Type header
  std::string_view content_encoding;  // "" or "gzip"
  std::string_view allow;             // the Allow header of a 405, else ""
};

// RejectReply
//
// The reply for a request refused before any handler runs, in this order: no HTTP/1.x version
// or a header line without a name (400), more than `max_headers` header lines (431), an
// unknown path (404), a method other than GET or HEAD (405). nullopt when a handler should
// answer.
//
// Example:
//   EXPECT_EQ(RejectReply(100, {.path = "/nope", .method = "GET", .version = "HTTP/1.1"})
//                 ->status, 404u);
std::optional<Reply> RejectReply(unsigned max_headers, const RequestHead& head);

// BuildReply
//
// RejectReply's reply if there is one, else the handler's: /metrics rendered in the negotiated
// format (gzip-compressed when accepted), /health as HttpHandlers::health reports. Never
// throws: a handler's exception becomes a 500 (reported through handlers.log when set).
//
// Example:
//   Reply r = BuildReply(handlers, 100, {.path = "/nope", .method = "GET", .version = "HTTP/1.1"});
//   EXPECT_EQ(r.status, 404u);
Reply BuildReply(const HttpHandlers& handlers, unsigned max_headers, const RequestHead& head);

// ReadRequestHead
//
// Gathers the RequestHead of the request on `connection` in one pass over its headers.
// `path`, `method` and `version` must outlive the returned value.
RequestHead ReadRequestHead(MHD_Connection* connection, const char* path, const char* method,
                            const char* version);

// QueueReply
//
// Hands `reply` to libmicrohttpd without copying the body (the response owns it until sent).
// For HEAD, libmicrohttpd sends the headers, including the body's Content-Length, and no body.
// Returns MHD_NO when the response cannot be created or queued; libmicrohttpd then closes the
// connection.
MHD_Result QueueReply(MHD_Connection* connection, Reply reply);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_REQUEST_HANDLER_H_
