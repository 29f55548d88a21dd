// The HTTP/1.1 client of bench-serve and demo; see http_client.h.
#include "cli/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vmetrics::cli {
namespace {

// Closes the socket on every way out.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

int Connect(const HttpUrl& url, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (int rc = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    *error = "cannot resolve " + url.host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      *error = std::string("cannot connect: ") + std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// Waits for `events` on fd; false on timeout or error.
bool WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int rc = poll(&p, 1, static_cast<int>(timeout.count()));
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0;
  }
}

bool SendAll(int fd, std::string_view data, std::chrono::milliseconds timeout, std::string* error) {
  while (!data.empty()) {
    if (!WaitFor(fd, POLLOUT, timeout)) {
      *error = "timed out sending";
      return false;
    }
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *error = std::string("send failed: ") + std::strerror(errno);
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads what the socket has into `buffer`; 0 at end of stream, -1 on error or timeout.
ssize_t ReadSome(int fd, std::string* buffer, std::chrono::milliseconds timeout,
                 std::string* error) {
  if (!WaitFor(fd, POLLIN, timeout)) {
    *error = "timed out reading";
    return -1;
  }
  char chunk[16 * 1024];
  for (;;) {
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) *error = std::string("receive failed: ") + std::strerror(errno);
    if (n > 0) buffer->append(chunk, static_cast<size_t>(n));
    return n;
  }
}

bool HeaderIs(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() || line[name.size()] != ':' ||
      strncasecmp(line.data(), name.data(), name.size()) != 0) {
    return false;
  }
  std::string_view v = line.substr(name.size() + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  *value = v;
  return true;
}

HttpClientResponse Exchange(const HttpUrl& url, std::string_view request,
                            const std::function<bool(std::string_view)>& on_body,
                            std::chrono::milliseconds timeout) {
  HttpClientResponse r;
  Socket socket(Connect(url, &r.error));
  if (socket.fd() < 0) return r;
  if (!SendAll(socket.fd(), request, timeout, &r.error)) return r;

  std::string in;
  size_t head_end = std::string::npos;
  while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
    if (ReadSome(socket.fd(), &in, timeout, &r.error) <= 0) {
      if (r.error.empty()) r.error = "connection closed before the response head";
      return r;
    }
  }
  // Status line and headers.
  std::string_view head(in.data(), head_end);
  const size_t first_eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, first_eol);
  if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/") {
    r.error = "not an HTTP response";
    return r;
  }
  r.status = std::atoi(std::string(status_line.substr(9, 3)).c_str());
  bool chunked = false;
  long long content_length = -1;
  for (size_t pos = first_eol; pos != std::string_view::npos && pos < head.size();) {
    const size_t next = head.find("\r\n", pos + 2);
    std::string_view line = head.substr(
        pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
    std::string_view value;
    if (HeaderIs(line, "Transfer-Encoding", &value)) {
      chunked = value.find("chunked") != std::string_view::npos;
    } else if (HeaderIs(line, "Content-Length", &value)) {
      content_length = std::atoll(std::string(value).c_str());
    } else if (HeaderIs(line, "Content-Type", &value)) {
      r.content_type = std::string(value);
    }
    pos = next;
  }
  in.erase(0, head_end + 4);

  // Body: handed over piece by piece.
  auto deliver = [&](std::string_view piece) {
    if (piece.empty()) return true;
    if (!on_body) {
      r.body.append(piece);
      return true;
    }
    if (on_body(piece)) return true;
    r.hung_up = true;
    return false;
  };
  auto more = [&]() -> bool {
    const ssize_t n = ReadSome(socket.fd(), &in, timeout, &r.error);
    if (n == 0 && r.error.empty()) r.error = "connection closed in the middle of the body";
    return n > 0;
  };
  if (chunked) {
    for (;;) {
      size_t eol;
      while ((eol = in.find("\r\n")) == std::string::npos) {
        if (!more()) return r;
      }
      const unsigned long long size = std::strtoull(in.c_str(), nullptr, 16);
      in.erase(0, eol + 2);
      if (size == 0) return r;  // trailers, if any, are not read: the exchange is over
      while (in.size() < size + 2) {
        if (!more()) return r;
      }
      if (!deliver(std::string_view(in.data(), size))) return r;
      in.erase(0, size + 2);
    }
  }
  if (content_length >= 0) {
    auto remaining = static_cast<size_t>(content_length);
    for (;;) {
      const size_t take = std::min(remaining, in.size());
      if (!deliver(std::string_view(in.data(), take))) return r;
      in.erase(0, take);
      remaining -= take;
      if (remaining == 0) return r;
      if (!more()) return r;
    }
  }
  for (;;) {  // until the server closes
    if (!deliver(in)) return r;
    in.clear();
    const ssize_t n = ReadSome(socket.fd(), &in, timeout, &r.error);
    if (n <= 0) return r;
  }
}

}  // namespace

bool ParseHttpUrl(std::string_view text, HttpUrl* url) {
  constexpr std::string_view kScheme = "http://";
  if (text.substr(0, kScheme.size()) != kScheme) return false;
  text.remove_prefix(kScheme.size());
  const size_t slash = text.find('/');
  std::string_view authority = text.substr(0, slash);
  url->path = slash == std::string_view::npos ? "/" : std::string(text.substr(slash));
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    url->host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty()) {
      if (authority.front() != ':') return false;
      port = authority.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    url->host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (url->host.empty()) return false;
  url->port = 80;
  if (!port.empty()) {
    unsigned long value = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + static_cast<unsigned long>(c - '0');
      if (value > 65535) return false;
    }
    url->port = static_cast<uint16_t>(value);
  }
  return true;
}

HttpClientResponse HttpPost(const HttpUrl& url, std::string_view body,
                            const std::function<bool(std::string_view)>& on_body,
                            std::chrono::milliseconds timeout) {
  std::string request =
      "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n";
  request.append(body);
  return Exchange(url, request, on_body, timeout);
}

HttpClientResponse HttpGet(const HttpUrl& url, std::chrono::milliseconds timeout) {
  const std::string request =
      "GET " + url.path + " HTTP/1.1\r\nHost: " + url.host + "\r\nConnection: close\r\n\r\n";
  return Exchange(url, request, nullptr, timeout);
}

}  // namespace vmetrics::cli
