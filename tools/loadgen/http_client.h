// SPDX-License-Identifier: Apache-2.0
// File: http_client.h
//
// HttpClient: a small blocking HTTP client on libcurl, enough to drive a frontend's JSON API:
// POST a body and GET, over http:// or https:// (the server verified against the system's CAs
// or a CA file), with basic authentication when a user is given, the response body handed over
// as it arrives, so a caller can time the first token of a server-sent-event stream or hang up
// in the middle of one. Used by `vmetrics bench-serve`, by `vmetrics demo` to send its traffic,
// and by the tests.
//
// Not part of the product libraries: only the tools and the tests link libcurl.
//
// Thread safety: an HttpClient is used by one thread at a time (it keeps its connection for
// the next request, as a benchmark client should); use one per thread. The free functions make
// a client per call and may be called from any thread.
//
// Example:
//   HttpClient client({.ca_file = "ca.pem", .user = "prometheus", .password = "secret"});
//   HttpClientResponse r =
//       client.Post("https://127.0.0.1:8000/v1/completions", R"({"prompt":[1,2],"max_tokens":4})");
//   EXPECT_EQ(r.status, 200) << r.error;
#ifndef VMETRICS_TOOLS_LOADGEN_HTTP_CLIENT_H_
#define VMETRICS_TOOLS_LOADGEN_HTTP_CLIENT_H_

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "vmetrics/status.h"

namespace vmetrics::loadgen {

struct HttpClientOptions {
  // A PEM file of the certificates that may sign an https:// server's certificate; "" = the
  // system's CA store. The host name is always verified.
  std::string ca_file;

  // Basic authentication (a web config's basic_auth_users) when `user` is not empty.
  std::string user;
  std::string password;

  // Bounds connecting, and any stretch of the response without a byte; a stream may last as
  // long as it keeps sending.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

struct HttpClientResponse {
  int status = 0;  // 0 when no complete response head arrived
  std::string content_type;
  std::string body;      // the whole body, unless on_body consumed it
  std::string error;     // "" on success; what went wrong otherwise
  bool hung_up = false;  // on_body asked to stop and the connection was closed
};

// CheckHttpUrl
//
// Ok for an absolute http:// or https:// URL with a host ("http://[::1]:8000/v1/completions");
// kInvalidArgument saying what is wrong otherwise.
Status CheckHttpUrl(std::string_view url);

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Post
  //
  // POSTs `body` (Content-Type: application/json) and reads the response. With `on_body`, each
  // piece of body is passed to it as it arrives instead of being kept; returning false closes
  // the connection at once (hung_up = true). The body is sent as it is, without
  // `Expect: 100-continue`.
  HttpClientResponse Post(const std::string& url, std::string_view body,
                          const std::function<bool(std::string_view)>& on_body = nullptr);

  // Get: GET `url` and return the whole response.
  HttpClientResponse Get(const std::string& url);

 private:
  HttpClientResponse Perform(const std::string& url, const std::string_view* post_body,
                             const std::function<bool(std::string_view)>& on_body);

  HttpClientOptions options_;
  void* curl_;  // CURL*, kept across requests so the connection is reused
};

// One request with a client of its own (a new connection).
HttpClientResponse HttpPost(const std::string& url, std::string_view body,
                            const std::function<bool(std::string_view)>& on_body = nullptr,
                            const HttpClientOptions& options = {});
HttpClientResponse HttpGet(const std::string& url, const HttpClientOptions& options = {});

}  // namespace vmetrics::loadgen

#endif  // VMETRICS_TOOLS_LOADGEN_HTTP_CLIENT_H_
