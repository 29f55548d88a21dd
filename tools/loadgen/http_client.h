// File: http_client.h
//
// A small blocking HTTP/1.1 client over POSIX sockets, enough to drive POST /v1/completions:
// one request per connection, the response body handed over as it arrives (Content-Length,
// chunked or until close; chunked framing removed), so a caller can time the first token of a
// server-sent-event stream or hang up in the middle of one. Used by `vmetrics bench-serve`,
// by `vmetrics demo` to send its traffic, and by the tests.
//
// Thread safety: every call uses its own socket; call from any number of threads.
//
// Example:
//   HttpUrl url;
//   ASSERT_TRUE(ParseHttpUrl("http://127.0.0.1:8000/v1/completions", &url));
//   HttpClientResponse r = HttpPost(url, R"({"prompt":[1,2],"max_tokens":4})");
//   EXPECT_EQ(r.status, 200);
#ifndef VMETRICS_CLI_HTTP_CLIENT_H_
#define VMETRICS_CLI_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace vmetrics::cli {

struct HttpUrl {
  std::string host;  // a name or an IPv4/IPv6 literal (without brackets)
  uint16_t port = 80;
  std::string path = "/";
};

// ParseHttpUrl: "http://host[:port][/path]" ("[::1]" for IPv6). false for anything else
// (https included: this client speaks plain HTTP only).
bool ParseHttpUrl(std::string_view text, HttpUrl* url);

struct HttpClientResponse {
  int status = 0;  // 0 when no complete response head arrived
  std::string content_type;
  std::string body;      // the whole body, unless on_body consumed it
  std::string error;     // "" on success; what went wrong otherwise
  bool hung_up = false;  // on_body asked to stop and the connection was closed
};

// HttpPost
//
// POSTs `body` (Content-Type: application/json) and reads the response. With `on_body`, each
// piece of body is passed to it as it arrives instead of being kept; returning false closes the
// connection at once (hung_up = true). Every socket operation is bounded by `timeout`; the
// whole exchange is not (a stream may last as long as it keeps sending).
HttpClientResponse HttpPost(const HttpUrl& url, std::string_view body,
                            const std::function<bool(std::string_view)>& on_body = nullptr,
                            std::chrono::milliseconds timeout = std::chrono::seconds(60));

// HttpGet: GET `url` and return the whole response.
HttpClientResponse HttpGet(const HttpUrl& url,
                           std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace vmetrics::cli

#endif  // VMETRICS_CLI_HTTP_CLIENT_H_
