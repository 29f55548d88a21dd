// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/internal/zmq_util.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace vmetrics::internal {

void ConfigureSocket(zmq::socket_t& socket, std::string_view address, int linger_ms) {
  socket.set(zmq::sockopt::rcvhwm, 0);
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::linger, linger_ms);
  if (address.starts_with("tcp://[")) socket.set(zmq::sockopt::ipv6, 1);
}

Status BindSocket(zmq::socket_t& socket, const std::string& address, std::string_view what,
                  StatusDetail detail, std::string* endpoint) {
  try {
    socket.bind(address);
    *endpoint = socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Socket(
        StatusStage::kBind,
        "cannot bind the " + std::string(what) + " at '" + address + "': " + e.what(), detail);
  }
  return Status::Ok();
}

std::string ReplaceTcpHost(std::string_view endpoint, std::string_view host) {
  constexpr std::string_view kTcp = "tcp://";
  if (!endpoint.starts_with(kTcp) || host.empty()) return std::string(endpoint);
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos || colon < kTcp.size()) return std::string(endpoint);
  std::string out(kTcp);
  const bool ipv6 = host.find(':') != std::string_view::npos && !host.starts_with("[");
  if (ipv6) out += '[';
  out += host;
  if (ipv6) out += ']';
  out += endpoint.substr(colon);
  return out;
}

int RecvMultipart(void* socket, std::vector<zmq::message_t>* frames, size_t* count, int flags) {
  *count = 0;
  for (;;) {
    if (*count == frames->size()) frames->emplace_back();
    zmq_msg_t* msg = (*frames)[*count].handle();
    const int rc = zmq_msg_recv(msg, socket, *count == 0 ? flags : 0);
    if (rc < 0) {
      if (errno == EINTR) continue;
      if (*count == 0 && errno == EAGAIN) return 0;
      return -1;
    }
    ++*count;
    if (!zmq_msg_more(msg)) return 1;
  }
}

int SourceFd(zmq::message_t& message) { return zmq_msg_get(message.handle(), ZMQ_SRCFD); }

uintptr_t ConnectionKeyOf(zmq::message_t& message) {
  return reinterpret_cast<uintptr_t>(zmq_msg_gets(message.handle(), "__fd"));
}

std::string FormatIdentity(std::string_view identity) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < identity.size() && i < 16; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<uint8_t>(identity[i]));
    if (i) out += ' ';
    out += buf;
  }
  if (identity.size() > 16) out += " ...";
  if (identity.empty()) out = "(empty)";
  return out;
}

std::string FormatIndexList(const std::vector<int>& indexes) {
  constexpr size_t kShown = 16;
  std::string out;
  for (size_t i = 0; i < indexes.size() && i < kShown; ++i) {
    if (i) out += ", ";
    out += std::to_string(indexes[i]);
  }
  if (indexes.size() > kShown)
    out += ", ... (+" + std::to_string(indexes.size() - kShown) + " more)";
  return out;
}

WakePipe::WakePipe() {
  if (pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
}

WakePipe::~WakePipe() {
  if (fds_[0] >= 0) close(fds_[0]);
  if (fds_[1] >= 0) close(fds_[1]);
}

void WakePipe::Notify() noexcept {
  if (fds_[1] < 0) return;
  const char byte = 'x';
  // EAGAIN means the pipe is full, hence already readable: nothing to do.
  [[maybe_unused]] const ssize_t n = write(fds_[1], &byte, 1);
}

bool WakePipe::Notified() const {
  if (fds_[0] < 0) return false;
  pollfd p{fds_[0], POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

Doorbell::Doorbell() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Doorbell::~Doorbell() {
  if (fd_ >= 0) close(fd_);
}

void Doorbell::Ring() const noexcept {
  if (fd_ < 0) return;
  const uint64_t one = 1;
  // EAGAIN only when the counter is near overflow, hence readable: nothing to do.
  [[maybe_unused]] const ssize_t n = write(fd_, &one, sizeof(one));
}

void Doorbell::Clear() const noexcept {
  if (fd_ < 0) return;
  uint64_t value = 0;
  [[maybe_unused]] const ssize_t n = read(fd_, &value, sizeof(value));
}

}  // namespace vmetrics::internal
