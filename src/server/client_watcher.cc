// SPDX-License-Identifier: Apache-2.0
#include "client_watcher.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <utility>

namespace vmetrics::internal {
namespace {

uint64_t EventData(int socket, uint32_t registration) {
  return (uint64_t{registration} << 32) | static_cast<uint32_t>(socket);
}

}  // namespace

ClientWatcher::ClientWatcher()
    : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)), stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (epoll_fd_ >= 0 && stop_fd_ >= 0) {
    epoll_event stop{.events = EPOLLIN, .data = {.u64 = EventData(stop_fd_, 0)}};
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &stop) != 0) {
      close(epoll_fd_);
      epoll_fd_ = -1;
    }
  }
  thread_ = std::thread([this] { Run(); });
}

ClientWatcher::~ClientWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  const uint64_t one = 1;
  if (stop_fd_ >= 0) (void)!write(stop_fd_, &one, sizeof one);
  thread_.join();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void ClientWatcher::Watch(const std::shared_ptr<HttpExchange>& exchange) {
  const int socket = exchange->WaitingSocket();
  if (socket < 0) return;  // answered already, or never suspended
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || epoll_fd_ < 0)
    return;  // no epoll: nothing is watched (streams still notice at writes)
  const uint32_t registration = ++registrations_;
  epoll_event armed{.events = EPOLLRDHUP | EPOLLONESHOT,
                    .data = {.u64 = EventData(socket, registration)}};
  // The socket may be in the set already: the connection's earlier request was watched (its
  // one-shot registration stays, disarmed or not, until the socket closes).
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, socket, &armed) != 0 &&
      (errno != EEXIST || epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, socket, &armed) != 0)) {
    return;
  }
  watched_[socket] = Watched{registration, exchange};
}

void ClientWatcher::Run() {
  if (epoll_fd_ < 0) return;
  std::array<epoll_event, 64> events;
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < n; ++i) {
      const int socket = static_cast<int>(static_cast<uint32_t>(events[i].data.u64));
      const auto registration = static_cast<uint32_t>(events[i].data.u64 >> 32);
      std::shared_ptr<HttpExchange> exchange;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        auto it = watched_.find(socket);
        if (socket == stop_fd_ || it == watched_.end() || it->second.registration != registration) {
          continue;  // the stop (seen above), or a registration a later Watch replaced
        }
        exchange = it->second.exchange.lock();
        watched_.erase(it);
      }
      if (exchange != nullptr) exchange->ClientHungUp(socket);
    }
  }
}

}  // namespace vmetrics::internal
