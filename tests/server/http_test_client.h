// SPDX-License-Identifier: Apache-2.0
// File: http_test_client.h
//
// A deliberately small HTTP/1.1 client over POSIX sockets for the server tests: one
// connection, raw bytes out, one response back. It sends exactly what a test writes, so
// malformed requests can be sent as easily as good ones.
//
// Thread safety: every call uses its own socket; call from any number of threads.
#ifndef VMETRICS_TESTS_SERVER_HTTP_TEST_CLIENT_H_
#define VMETRICS_TESTS_SERVER_HTTP_TEST_CLIENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vmetrics::http_test {

struct HttpResponse {
  bool connected = false;  // false: the connection was refused (nothing else is set)
  int status = 0;          // 0: closed or reset before a complete status line and headers
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, in order
  std::string body;

  // Value of the first header called `name` (any case), or "" when absent.
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

struct ExchangeOptions {
  std::string host = "127.0.0.1";  // an IPv4 or IPv6 literal
  // The client's own address, of host's family ("127.0.0.7": any 127/8 address works on
  // Linux, so one test can be many clients); "" = the kernel's choice.
  std::string source;
  bool head = false;  // the request is HEAD: the response has no body to read
};

// Exchange
//
// Connects to host:port, sends `raw` (ignoring a write error: the server may close early on a
// bad request, and its answer may still be readable), then reads one response: the status
// line, the headers and Content-Length bytes of body (or up to EOF without Content-Length).
// Every socket operation is bounded by a 10 s timeout so a broken server fails the test rather
// than hanging it.
//
// Example:
//   HttpResponse r = Exchange(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
//   EXPECT_EQ(r.status, 200);
HttpResponse Exchange(uint16_t port, std::string_view raw, const ExchangeOptions& options = {});

// ExchangeInTurn
//
// Like Exchange, but sends the requests one after the other on one connection, each once the
// previous response has been read: HTTP/1.1 keep-alive. Stops after the first response with
// status 0 (connection closed); the result has one entry per request sent.
//
// Example:
//   auto replies = ExchangeInTurn(port, {Request("GET", "/health", {}, /*close=*/false),
//                                        Request("GET", "/health")});
//   EXPECT_EQ(replies.size(), 2u);
std::vector<HttpResponse> ExchangeInTurn(uint16_t port, const std::vector<std::string>& requests,
                                         const ExchangeOptions& options = {});

// Request
//
// The text of a request with a Host header, the given headers and, when `close`,
// "Connection: close".
//
// Example:
//   EXPECT_EQ(Request("GET", "/metrics", {{"Accept", "text/plain"}}),
//             "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n"
//             "Connection: close\r\n\r\n");
std::string Request(std::string_view method, std::string_view target,
                    const std::vector<std::pair<std::string, std::string>>& headers = {},
                    bool close = true);

// Get: Exchange(port, Request("GET", target, headers)).
HttpResponse Get(uint16_t port, std::string_view target,
                 const std::vector<std::pair<std::string, std::string>>& headers = {});

// ConnectTo
//
// A connected TCP socket to host:port (an IPv4 or IPv6 literal) from `source` (as
// ExchangeOptions::source) with the same 10 s send and receive timeouts Exchange uses, or -1
// when refused or `source` cannot be bound. The caller closes it.
int ConnectTo(const std::string& host, uint16_t port, const std::string& source = "");

// ReadResponse
//
// Reads one response into `response` through `receive_more`, which appends what arrived to its
// argument and returns false on EOF, error or timeout (so a TLS client can share the parser).
// `buffer` holds bytes already received and keeps whatever follows this response. Sets status
// 0 when the connection ends before a complete head.
void ReadResponse(const std::function<bool(std::string*)>& receive_more, bool head_request,
                  std::string* buffer, HttpResponse* response);

// ReadSocketResponse: ReadResponse over the plain socket `fd` (recv until the response is
// whole, the socket's timeout bounds each wait).
void ReadSocketResponse(int fd, bool head_request, std::string* buffer, HttpResponse* response);

// Gunzip: inflates a gzip stream with zlib. Returns false on a corrupt or truncated stream.
bool Gunzip(std::string_view compressed, std::string* out);

}  // namespace vmetrics::http_test

#endif  // VMETRICS_TESTS_SERVER_HTTP_TEST_CLIENT_H_
