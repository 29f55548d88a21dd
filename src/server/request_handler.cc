// SPDX-License-Identifier: Apache-2.0
// Routing and responses for the HTTP server; see request_handler.h.
#include "request_handler.h"

#include <strings.h>

#include <cstring>
#include <exception>
#include <memory>
#include <utility>

#include "vmetrics/exposition.h"

namespace vmetrics::internal {
namespace {

constexpr std::string_view kContentTypePlain = "text/plain; charset=utf-8";
constexpr std::string_view kContentTypeJson = "application/json";
constexpr std::string_view kAllowGetHead = "GET, HEAD";

// FastAPI's bodies for unknown paths and wrong methods, so a client that parses vLLM's errors
// parses ours.
constexpr std::string_view kNotFoundBody = R"({"detail":"Not Found"})";
constexpr std::string_view kMethodNotAllowedBody = R"({"detail":"Method Not Allowed"})";
// vLLM's AuthenticationMiddleware: JSONResponse(content={"error": "Unauthorized"}).
constexpr std::string_view kUnauthorizedApiKeyBody = R"({"error":"Unauthorized"})";

Reply TextReply(unsigned status, std::string_view body) {
  Reply reply;
  reply.status = status;
  reply.body = std::string(body);
  reply.content_type = kContentTypePlain;
  return reply;
}

Reply JsonReply(unsigned status, std::string_view body) {
  Reply reply;
  reply.status = status;
  reply.body = std::string(body);
  reply.content_type = kContentTypeJson;
  return reply;
}

void Log(const HttpHandlers& handlers, std::string_view message) {
  if (!handlers.log) return;
  // A throwing log sink must not take the request down with it.
  try {
    handlers.log(message);
  } catch (...) {
  }
}

// Thrown by a shelved render whose gzip failed: that scrape is answered uncompressed, unshelved.
struct GzipFailed {};

Reply MetricsReply(const HttpHandlers& handlers, const RequestHead& head, BodyShelf* bodies) {
  const Negotiated negotiated = Negotiate(head.accept, head.accept_encoding);
  if (bodies != nullptr) {
    const size_t kind =
        (negotiated.format == ExpositionFormat::kOpenMetrics ? 2 : 0) + (negotiated.gzip ? 1 : 0);
    try {
      Reply reply;
      reply.status = MHD_HTTP_OK;
      reply.content_type = negotiated.content_type;
      reply.shared_body = bodies->Get(kind, [&] {
        std::string body = handlers.render_metrics(negotiated.format);
        if (!negotiated.gzip) return body;
        std::string compressed;
        if (!GzipCompress(body, &compressed)) throw GzipFailed{};
        return compressed;
      });
      if (negotiated.gzip) reply.content_encoding = "gzip";
      return reply;
    } catch (const GzipFailed&) {
      // Rendered again below, uncompressed: identity is always acceptable.
    }
  }
  Reply reply;
  reply.status = MHD_HTTP_OK;
  reply.body = handlers.render_metrics(negotiated.format);
  reply.content_type = negotiated.content_type;
  if (negotiated.gzip) {
    std::string compressed;
    // A zlib failure is no reason to fail the scrape: identity is always acceptable.
    if (GzipCompress(reply.body, &compressed)) {
      reply.body = std::move(compressed);
      reply.content_encoding = "gzip";
    } else {
      Log(handlers, "gzip compression failed; sending /metrics uncompressed");
    }
  }
  return reply;
}

Reply HealthReply(const HttpHandlers& handlers) {
  if (!handlers.health) return Reply{};
  HealthReport report = handlers.health();
  Reply reply;
  reply.status = report.healthy ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
  reply.body = std::move(report.body);
  // vLLM answers /health with no body and so no Content-Type; keep it that way when empty.
  if (!reply.body.empty()) reply.content_type = kContentTypePlain;
  return reply;
}

bool NameIs(std::string_view name, std::string_view wanted) {
  return name.size() == wanted.size() &&
         strncasecmp(name.data(), wanted.data(), wanted.size()) == 0;
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Digits only (RFC 9110 §8.6), at most 19 of them so the value cannot overflow.
bool ParseDecimal(std::string_view text, uint64_t* value) {
  text = TrimBlanks(text);
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = v;
  return true;
}

// libmicrohttpd 0.9.75 keeps each header as pointers into its read buffer: the name, ended by
// the NUL written over its colon, then the value after the blanks that follow. An obs-folded
// line ("Name: a\r\n b") is accepted silently: the continuation is appended to a copy of the
// name made elsewhere in the connection's memory pool, so the name no longer ends where its
// value begins. Both pointers are in that one pool, so the bytes between are readable; a gap
// larger than any request head cannot be adjacency.
bool ValueFollowsName(const char* key, const char* value) {
  const char* name_end = key + std::strlen(key);  // the NUL over the colon
  // Compared as integers: the two may point into different blocks of the pool.
  const auto end_at = reinterpret_cast<uintptr_t>(name_end);
  const auto value_at = reinterpret_cast<uintptr_t>(value);
  if (value_at <= end_at || value_at - end_at > uintptr_t{64} * 1024) return false;
  for (const char* p = name_end + 1; p != value; ++p) {
    if (*p != ' ' && *p != '\t') return false;
  }
  return true;
}

// Collects what RequestHead needs from each header line, for ReadRequestHead. libmicrohttpd
// passes a NULL key for a line without a name; values are never NULL for headers, but a NULL
// would read as empty.
MHD_Result CollectHeader(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  auto* head = static_cast<RequestHead*>(cls);
  if (key != nullptr && value != nullptr && !ValueFollowsName(key, value)) {
    head->folded_header = true;
  }
  AddHeader(key != nullptr ? key : "", value != nullptr ? value : "", head);
  return MHD_YES;
}

// RFC 9110 §5.6.2: tchar.
bool IsTokenChar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void FreeBody(void* cls) { delete static_cast<std::string*>(cls); }
void FreeSharedBody(void* cls) { delete static_cast<std::shared_ptr<const std::string>*>(cls); }

// Block size libmicrohttpd asks the stream reader to fill at most.
constexpr size_t kStreamBlockBytes = size_t{16} * 1024;

ssize_t ReadStream(void* cls, uint64_t /*pos*/, char* buf, size_t max) {
  return (*static_cast<std::shared_ptr<HttpExchange>*>(cls))->ReadStream(buf, max);
}

void FreeStream(void* cls) { delete static_cast<std::shared_ptr<HttpExchange>*>(cls); }

// Adds the reply's headers and `extra_headers` to `response`, queues it with reply.status and
// drops this function's reference (the connection holds its own once queued).
MHD_Result QueueResponse(MHD_Connection* connection, MHD_Response* response, const Reply& reply,
                         const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  bool headers_ok = true;
  auto add_header = [&](const char* name, std::string_view value) {
    if (value.empty()) return;
    // MHD wants NUL-terminated values; the views come from string constants but are not
    // guaranteed to be terminated, so copy.
    headers_ok = headers_ok &&
                 MHD_add_response_header(response, name, std::string(value).c_str()) == MHD_YES;
  };
  add_header(MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type);
  add_header(MHD_HTTP_HEADER_CONTENT_ENCODING, reply.content_encoding);
  add_header(MHD_HTTP_HEADER_CACHE_CONTROL, reply.cache_control);
  add_header(MHD_HTTP_HEADER_ALLOW, reply.allow);
  add_header(MHD_HTTP_HEADER_WWW_AUTHENTICATE, reply.www_authenticate);
  add_header(MHD_HTTP_HEADER_RETRY_AFTER, reply.retry_after);
  if (reply.close) add_header(MHD_HTTP_HEADER_CONNECTION, "close");
  for (const auto& [name, value] : extra_headers) add_header(name.c_str(), value);
  const MHD_Result queued =
      headers_ok ? MHD_queue_response(connection, reply.status, response) : MHD_NO;
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

Reply UnauthorizedReply() {
  // exporter-toolkit's body (Go's http.StatusText), so a client that shows it shows the same.
  Reply reply = TextReply(MHD_HTTP_UNAUTHORIZED, "Unauthorized");
  reply.www_authenticate = kBasicAuthChallenge;
  return reply;
}

Reply TooManyRequestsReply() {
  Reply reply = TextReply(MHD_HTTP_TOO_MANY_REQUESTS, "Too Many Requests");
  reply.retry_after = "1";
  return reply;
}

Reply ServiceUnavailableReply() {
  return TextReply(MHD_HTTP_SERVICE_UNAVAILABLE, "Service Unavailable");
}

Reply ScrapeReserveReply() {
  Reply reply = ServiceUnavailableReply();
  reply.retry_after = "1";
  return reply;
}

bool TargetHasControlBytes(std::string_view raw_target) {
  for (size_t i = 0; i < raw_target.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw_target[i]);
    if (c < 0x21 || c == 0x7f) return true;
    if (c == '%' && i + 2 < raw_target.size()) {
      const int hi = HexValue(raw_target[i + 1]);
      const int lo = HexValue(raw_target[i + 2]);
      if (hi >= 0 && lo >= 0) {
        const int decoded = hi * 16 + lo;
        // A decoded space is data (a query's "a%20b"); a decoded control byte is not.
        if (decoded < 0x20 || decoded == 0x7f) return true;
      }
    }
  }
  return false;
}

void AddHeader(std::string_view name, std::string_view value, RequestHead* head) {
  ++head->header_count;
  if (name.empty()) {
    head->empty_header_name = true;
    return;
  }
  for (const char c : name) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) head->invalid_header_name = true;
  }
  if (NameIs(name, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
    head->has_body = true;
    head->transfer_encoding = true;
    return;
  }
  if (NameIs(name, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
    if (value != "0") head->has_body = true;
    ++head->content_length_count;
    head->content_length_valid = ParseDecimal(value, &head->content_length);
    if (!head->content_length_valid) head->content_length_malformed = true;
    return;
  }
  if (NameIs(name, MHD_HTTP_HEADER_HOST)) {
    ++head->host_count;
    return;
  }
  if (NameIs(name, MHD_HTTP_HEADER_EXPECT)) {
    head->expect_continue = TrimBlanks(value).size() == 12 &&
                            strncasecmp(TrimBlanks(value).data(), "100-continue", 12) == 0;
    return;
  }
  if (NameIs(name, MHD_HTTP_HEADER_AUTHORIZATION)) {
    ++head->authorization_count;
    head->authorization = value;
    return;
  }
  std::string* joined = nullptr;
  if (NameIs(name, MHD_HTTP_HEADER_ACCEPT)) {
    joined = &head->accept;
  } else if (NameIs(name, MHD_HTTP_HEADER_ACCEPT_ENCODING)) {
    joined = &head->accept_encoding;
  }
  if (joined != nullptr) {
    if (!joined->empty()) joined->push_back(',');
    joined->append(value);
  }
}

Endpoint RouteFor(std::string_view path) {
  if (path == "/metrics" || path == "/metrics/") return Endpoint::kMetrics;
  if (path == "/health") return Endpoint::kHealth;
  return Endpoint::kNotFound;
}

std::optional<Reply> RejectMalformed(const RequestRules& rules, const RequestHead& head) {
  // libmicrohttpd answers unknown HTTP versions itself (505) but passes on a request line
  // without one (HTTP/0.9's "GET /metrics") with an empty version. Nothing speaks 0.9 any more;
  // such a line is garbage, and answering it with a body would only confuse the sender.
  // Likewise a header line with no name (": value"): a field name is at least one character
  // (RFC 9110 §5.1), so the sender is not speaking HTTP.
  //
  // Every 400 here closes the connection: the head was not what the client meant to send or
  // what a proxy in front may have read, so what follows it cannot be trusted to be a request.
  Reply bad = TextReply(MHD_HTTP_BAD_REQUEST, "Bad Request");
  bad.close = true;
  if ((head.version != MHD_HTTP_VERSION_1_1 && head.version != MHD_HTTP_VERSION_1_0) ||
      head.empty_header_name) {
    return bad;
  }
  // A field name is a token (RFC 9110 §5.1); a line folded onto the previous one
  // (obs-fold) must be refused by a server (RFC 9112 §5.2) — libmicrohttpd glues it to the
  // name, so "Transfer-Encoding:\r\n chunked" would go unseen. Control bytes in the target:
  // a decoded NUL would cut the path short ("/abort_requests%00.png").
  if (head.invalid_header_name || head.folded_header || head.bad_target) return bad;
  // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host and to any
  // request with more than one Host line. Two Host lines would also leave a proxy and this
  // server free to read different ones.
  if (head.host_count > 1 || (head.host_count == 0 && head.version == MHD_HTTP_VERSION_1_1)) {
    return bad;
  }
  // RFC 9112 §6.3: two Content-Length lines (equal or not), one that is not a number, or one
  // beside Transfer-Encoding leave the body's end open to interpretation, which is how a
  // request is smuggled past a proxy that reads it differently. libmicrohttpd 0.9.75 reads the
  // first line only, and the rest of the body as the next request.
  if (head.content_length_count > 1 || head.content_length_malformed ||
      (head.content_length_count > 0 && head.transfer_encoding)) {
    return bad;
  }
  // Checked before routing: the header count is a cost the client already imposed, whatever
  // the path.
  if (head.header_count > rules.max_headers) {
    return TextReply(MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, "Request Header Fields Too Large");
  }
  return std::nullopt;
}

std::optional<BodyRefusal> RejectRouteBody(const RequestHead& head, size_t max_body_bytes) {
  if (head.transfer_encoding) {
    return BodyRefusal{MHD_HTTP_LENGTH_REQUIRED,
                       "request bodies must have a Content-Length (Transfer-Encoding is not "
                       "accepted)"};
  }
  if (head.expect_continue && head.content_length_valid && head.content_length > max_body_bytes) {
    return BodyRefusal{MHD_HTTP_EXPECTATION_FAILED,
                       "request body of " + std::to_string(head.content_length) +
                           " bytes is larger than " + std::to_string(max_body_bytes) + " bytes"};
  }
  return std::nullopt;
}

CredentialsCheck CheckCredentialsQuickly(const RequestRules& rules, const RequestHead& head) {
  CredentialsCheck check;
  if (rules.basic_auth == nullptr) return check;
  // Two Authorization headers would leave a proxy and this server free to read different
  // ones; refuse rather than pick.
  std::optional<BasicCredentials> credentials;
  if (head.authorization_count == 1) credentials = ParseBasicAuthorization(head.authorization);
  if (!credentials.has_value()) {
    check.outcome = CredentialsOutcome::kRefused;
    return check;
  }
  switch (rules.basic_auth->Lookup(*credentials)) {
    case BasicAuthVerifier::Known::kUnknown:
      check.outcome = CredentialsOutcome::kNeedsVerification;
      check.credentials = std::move(*credentials);
      return check;
    case BasicAuthVerifier::Known::kDenied:
      check.outcome = CredentialsOutcome::kRefused;
      break;
    case BasicAuthVerifier::Known::kAllowed:
      break;
  }
  explicit_bzero(credentials->password.data(), credentials->password.size());
  return check;
}

std::optional<Reply> RejectUnrouted(const RequestHead& head) {
  return RejectUnrouted(RequestRules{}, head);
}

std::optional<Reply> RejectUnrouted(const RequestRules& rules, const RequestHead& head) {
  // Two Authorization headers are refused, as basic auth refuses them: a proxy and the server
  // could read different ones (vLLM reads the first).
  if (rules.api_keys != nullptr && rules.api_keys->Guards(head.method, head.path) &&
      (head.authorization_count != 1 || !rules.api_keys->Accepts(head.authorization))) {
    return JsonReply(MHD_HTTP_UNAUTHORIZED, kUnauthorizedApiKeyBody);
  }
  if (RouteFor(head.path) == Endpoint::kNotFound) {
    const RouteTable::Match match =
        rules.routes != nullptr ? rules.routes->Find(head.method, head.path) : RouteTable::Match{};
    if (match.route != nullptr) return std::nullopt;
    if (match.allow.empty()) return JsonReply(MHD_HTTP_NOT_FOUND, kNotFoundBody);
    Reply reply = JsonReply(MHD_HTTP_METHOD_NOT_ALLOWED, kMethodNotAllowedBody);
    reply.allow = match.allow;
    return reply;
  }
  if (head.method != MHD_HTTP_METHOD_GET && head.method != MHD_HTTP_METHOD_HEAD) {
    Reply reply = JsonReply(MHD_HTTP_METHOD_NOT_ALLOWED, kMethodNotAllowedBody);
    reply.allow = kAllowGetHead;
    return reply;
  }
  return std::nullopt;
}

const HttpRoute* FindRoute(const RequestRules& rules, const RequestHead& head) {
  if (rules.routes == nullptr || RouteFor(head.path) != Endpoint::kNotFound) return nullptr;
  return rules.routes->Find(head.method, head.path).route;
}

std::optional<Reply> RejectReply(const RequestRules& rules, const RequestHead& head) {
  if (std::optional<Reply> refusal = RejectMalformed(rules, head)) return refusal;
  CredentialsCheck check = CheckCredentialsQuickly(rules, head);
  if (check.outcome == CredentialsOutcome::kNeedsVerification) {
    const bool ok = rules.basic_auth->Verify(check.credentials);
    explicit_bzero(check.credentials.password.data(), check.credentials.password.size());
    check.outcome = ok ? CredentialsOutcome::kAccepted : CredentialsOutcome::kRefused;
  }
  if (check.outcome == CredentialsOutcome::kRefused) return UnauthorizedReply();
  return RejectUnrouted(rules, head);
}

Reply BuildReply(const HttpHandlers& handlers, const RequestRules& rules, const RequestHead& head) {
  if (std::optional<Reply> refusal = RejectReply(rules, head)) return std::move(*refusal);
  return HandlerReply(handlers, head);
}

Reply HandlerReply(const HttpHandlers& handlers, const RequestHead& head, BodyShelf* bodies) {
  const Endpoint endpoint = RouteFor(head.path);
  // Routes are answered on an HttpExchange (http_server.cc), never here.
  if (endpoint == Endpoint::kNotFound) return JsonReply(MHD_HTTP_NOT_FOUND, kNotFoundBody);
  // The handlers are the caller's code running on a C library's thread; nothing may unwind
  // through libmicrohttpd.
  try {
    return endpoint == Endpoint::kMetrics ? MetricsReply(handlers, head, bodies)
                                          : HealthReply(handlers);
  } catch (const std::exception& e) {
    Log(handlers, std::string("handler for ") + std::string(head.path) + " threw: " + e.what());
  } catch (...) {
    Log(handlers, std::string("handler for ") + std::string(head.path) + " threw");
  }
  return TextReply(MHD_HTTP_INTERNAL_SERVER_ERROR, "Internal Server Error");
}

RequestHead ReadRequestHead(MHD_Connection* connection, const char* path, const char* method,
                            const char* version) {
  RequestHead head;
  head.path = path != nullptr ? path : "";
  head.method = method != nullptr ? method : "";
  head.version = version != nullptr ? version : "";
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &CollectHeader, &head);
  return head;
}

MHD_Result QueueReply(MHD_Connection* connection, Reply reply,
                      const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  if (reply.shared_body != nullptr) {
    // The response holds a reference to the shared body, dropped by FreeSharedBody.
    // libmicrohttpd only reads a buffer response (its parameter is not const in 0.9.75).
    auto held = std::make_unique<std::shared_ptr<const std::string>>(std::move(reply.shared_body));
    MHD_Response* response = MHD_create_response_from_buffer_with_free_callback_cls(
        (*held)->size(), const_cast<char*>((*held)->data()), &FreeSharedBody, held.get());
    if (response == nullptr) return MHD_NO;
    (void)held.release();  // owned by `response` from here on
    return QueueResponse(connection, response, reply, extra_headers);
  }
  // The response takes the body string itself, freed by FreeBody once the response is
  // destroyed: a scrape body is a few hundred KiB, not worth copying on every request.
  auto body = std::make_unique<std::string>(std::move(reply.body));
  MHD_Response* response = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), &FreeBody, body.get());
  if (response == nullptr) return MHD_NO;
  (void)body.release();  // owned by `response` from here on
  return QueueResponse(connection, response, reply, extra_headers);
}

MHD_Result QueueStream(MHD_Connection* connection, std::shared_ptr<HttpExchange> exchange,
                       std::string_view content_type,
                       const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  // The response owns a reference to the exchange, dropped by FreeStream when libmicrohttpd
  // destroys the response.
  auto owned = std::make_unique<std::shared_ptr<HttpExchange>>(std::move(exchange));
  MHD_Response* response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamBlockBytes,
                                                             &ReadStream, owned.get(), &FreeStream);
  if (response == nullptr) return MHD_NO;
  (void)owned.release();  // owned by `response` from here on
  Reply reply;
  reply.content_type = content_type;
  reply.cache_control = "no-cache";
  return QueueResponse(connection, response, reply, extra_headers);
}

}  // namespace vmetrics::internal
