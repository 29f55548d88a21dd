// SPDX-License-Identifier: Apache-2.0
#include "client_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

namespace vmetrics::internal {

ClientWatcher::ClientWatcher()
    : wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), thread_([this] { Run(); }) {}

ClientWatcher::~ClientWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Wake();
  thread_.join();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void ClientWatcher::Watch(const std::shared_ptr<HttpExchange>& exchange) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    std::erase_if(watched_, [](const std::weak_ptr<HttpExchange>& w) {
      const std::shared_ptr<HttpExchange> e = w.lock();
      return e == nullptr || e->WaitingSocket() < 0;
    });
    watched_.push_back(exchange);
  }
  Wake();
}

void ClientWatcher::Wake() const {
  const uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the thread wakes anyway.
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof one);
}

void ClientWatcher::Run() {
  if (wake_fd_ < 0) return;  // no eventfd: nothing is watched (streams still notice at writes)
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<HttpExchange>> owners;  // owners[i] has fds[i + 1]
  for (;;) {
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    owners.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      std::erase_if(watched_, [&](const std::weak_ptr<HttpExchange>& w) {
        std::shared_ptr<HttpExchange> e = w.lock();
        const int socket = e != nullptr ? e->WaitingSocket() : -1;
        if (socket < 0) return true;  // answered, gone, or never suspended: done with it
        fds.push_back(pollfd{socket, POLLRDHUP, 0});
        owners.push_back(std::move(e));
        return false;
      });
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      uint64_t count = 0;
      (void)!read(wake_fd_, &count, sizeof count);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        owners[i - 1]->ClientHungUp(fds[i].fd);
      }
    }
  }
}

}  // namespace vmetrics::internal
