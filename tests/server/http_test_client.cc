// SPDX-License-Identifier: Apache-2.0
#include "http_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace vmetrics::http_test {
namespace {

constexpr int kIoTimeoutSeconds = 10;

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// `host` (an IPv4 or IPv6 literal) and `port` as a socket address; 0 length when not a literal.
socklen_t SocketAddress(const std::string& host, uint16_t port, sockaddr_storage* address) {
  *address = sockaddr_storage{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return sizeof *v4;
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return sizeof *v6;
  }
  return 0;
}

}  // namespace

int ConnectTo(const std::string& host, uint16_t port, const std::string& source) {
  sockaddr_storage address{};
  const socklen_t length = SocketAddress(host, port, &address);
  if (length == 0) return -1;
  sockaddr_storage local{};
  const socklen_t local_length = source.empty() ? 0 : SocketAddress(source, 0, &local);
  if (!source.empty() && (local_length == 0 || local.ss_family != address.ss_family)) return -1;
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{};
  timeout.tv_sec = kIoTimeoutSeconds;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if ((local_length != 0 &&
       bind(fd, reinterpret_cast<const sockaddr*>(&local), local_length) != 0) ||
      connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

namespace {

void SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    // MSG_NOSIGNAL: a server that closes on a bad request must not kill the test with SIGPIPE.
    const ssize_t sent = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return;
    data.remove_prefix(static_cast<size_t>(sent));
  }
}

// Appends what recv returns; false on EOF, error or timeout.
bool ReceiveMore(int fd, std::string* buffer) {
  char chunk[16384];
  for (;;) {
    const ssize_t got = recv(fd, chunk, sizeof chunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(got));
    return true;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses the status line and headers in `head` (without the blank line). False if malformed.
bool ParseHead(std::string_view head, HttpResponse* response) {
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (status_line.substr(0, 5) != "HTTP/" || status_line.size() < 12) return false;
  const std::string_view code = status_line.substr(9, 3);
  if (std::from_chars(code.data(), code.data() + code.size(), response->status).ec != std::errc{}) {
    return false;
  }
  while (line_end != std::string_view::npos) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, line_end - start);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    response->headers.emplace_back(Lower(line.substr(0, colon)),
                                   std::string(Trim(line.substr(colon + 1))));
  }
  return true;
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  const std::string wanted = Lower(name);
  for (const auto& [key, value] : headers) {
    if (key == wanted) return value;
  }
  return "";
}

bool HttpResponse::HasHeader(std::string_view name) const {
  const std::string wanted = Lower(name);
  for (const auto& header : headers) {
    if (header.first == wanted) return true;
  }
  return false;
}

void ReadResponse(const std::function<bool(std::string*)>& receive_more, bool head_request,
                  std::string* buffer, HttpResponse* response) {
  size_t head_end = std::string::npos;
  while ((head_end = buffer->find("\r\n\r\n")) == std::string::npos) {
    if (!receive_more(buffer)) return;  // status stays 0
  }
  if (!ParseHead(std::string_view(*buffer).substr(0, head_end), response)) {
    response->status = 0;
    response->headers.clear();
    return;
  }
  buffer->erase(0, head_end + 4);
  const bool bodyless = head_request || response->status / 100 == 1 || response->status == 204 ||
                        response->status == 304;
  if (bodyless) return;
  if (response->HasHeader("content-length")) {
    const std::string length_text = response->Header("content-length");
    size_t length = 0;
    std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
    while (buffer->size() < length && receive_more(buffer)) {
    }
    const size_t taken = std::min(buffer->size(), length);
    response->body = buffer->substr(0, taken);
    buffer->erase(0, taken);
  } else {
    while (receive_more(buffer)) {
    }
    response->body = std::move(*buffer);
    buffer->clear();
  }
}

void ReadSocketResponse(int fd, bool head_request, std::string* buffer, HttpResponse* response) {
  ReadResponse([fd](std::string* b) { return ReceiveMore(fd, b); }, head_request, buffer, response);
}

HttpResponse Exchange(uint16_t port, std::string_view raw, const ExchangeOptions& options) {
  HttpResponse response;
  const Socket socket(ConnectTo(options.host, port, options.source));
  if (socket.fd() < 0) return response;
  response.connected = true;
  SendAll(socket.fd(), raw);
  std::string buffer;
  ReadSocketResponse(socket.fd(), options.head, &buffer, &response);
  return response;
}

std::vector<HttpResponse> ExchangeInTurn(uint16_t port, const std::vector<std::string>& requests,
                                         const ExchangeOptions& options) {
  std::vector<HttpResponse> responses;
  const Socket socket(ConnectTo(options.host, port, options.source));
  std::string buffer;
  for (const std::string& request : requests) {
    HttpResponse& response = responses.emplace_back();
    if (socket.fd() < 0) break;
    response.connected = true;
    SendAll(socket.fd(), request);
    ReadSocketResponse(socket.fd(), options.head, &buffer, &response);
    if (response.status == 0) break;
  }
  return responses;
}

std::string Request(std::string_view method, std::string_view target,
                    const std::vector<std::pair<std::string, std::string>>& headers, bool close) {
  std::string text;
  text.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  for (const auto& [name, value] : headers)
    text.append(name).append(": ").append(value).append("\r\n");
  if (close) text.append("Connection: close\r\n");
  text.append("\r\n");
  return text;
}

HttpResponse Get(uint16_t port, std::string_view target,
                 const std::vector<std::pair<std::string, std::string>>& headers) {
  return Exchange(port, Request("GET", target, headers));
}

bool Gunzip(std::string_view compressed, std::string* out) {
  z_stream stream{};
  // 16 + MAX_WBITS: expect the gzip wrapper, not raw zlib.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return false;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  out->clear();
  char chunk[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    rc = inflate(&stream, Z_NO_FLUSH);
    out->append(chunk, sizeof chunk - stream.avail_out);
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) break;  // truncated input
  }
  inflateEnd(&stream);
  return rc == Z_STREAM_END && stream.avail_in == 0;
}

}  // namespace vmetrics::http_test
