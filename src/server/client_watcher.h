// SPDX-License-Identifier: Apache-2.0
// File: client_watcher.h (internal to src/server)
//
// ClientWatcher: notices that a client hung up while its request to a route (HttpRoute) waits
// for a non-streamed answer.
//
// Why: such a connection is suspended (MHD_suspend_connection) until the answer is ready, and
// libmicrohttpd does not poll suspended connections; a stream notices a vanished client at its
// next write, a waiting answer never did, so a client that gave up (a timeout) left its
// requests running to the end and recorded as finished. vLLM's API server aborts them
// (`with_cancellation`), recording nothing. The watcher's one thread waits on an epoll set of
// the waiting exchanges' sockets for the peer's hang-up (EPOLLRDHUP, EPOLLHUP, EPOLLERR) and
// hands each to HttpExchange::ClientHungUp, which runs the client-gone callback (the abort) and
// lets libmicrohttpd close the connection.
//
// Watch registers the socket itself (epoll_ctl, one-shot): the thread is not woken for it, and
// no call costs more as more requests wait (every request of `serve` is watched until its
// first byte is written: a list rebuilt and polled whole at each Watch was a third of serve's
// CPU per request at 512 concurrent requests, bench/README.md "Token APIs against their
// floor").
//
// A client that shuts down only its sending side counts as gone too: a hang-up cannot be told
// from it without reading, and the request body was read in full before the wait.
//
// An event is handed to the exchange whose Watch armed it (each registration carries a
// number of its own), never to a later exchange that reuses the socket number; ClientHungUp
// checks again under the exchange's lock that it still waits on that socket, so an event that
// arrives after the answer, or after libmicrohttpd closed the connection, is ignored. A closed
// socket leaves the epoll set by itself (the kernel drops it with the last descriptor).
//
// Thread safety: Watch may be called from any thread; the destructor from one thread.
#ifndef VMETRICS_SERVER_CLIENT_WATCHER_H_
#define VMETRICS_SERVER_CLIENT_WATCHER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "vmetrics/http_route.h"

namespace vmetrics::internal {

class ClientWatcher {
 public:
  // Starts the thread.
  ClientWatcher();
  // Stops and joins the thread. No callback runs after it returns.
  ~ClientWatcher();
  ClientWatcher(const ClientWatcher&) = delete;
  ClientWatcher& operator=(const ClientWatcher&) = delete;

  // Watches `exchange` for as long as it waits for its answer (it is suspended in
  // SuspendUntilAnswered first).
  void Watch(const std::shared_ptr<HttpExchange>& exchange);

 private:
  struct Watched {
    uint32_t registration = 0;  // which Watch armed the socket (epoll_event's upper half)
    std::weak_ptr<HttpExchange> exchange;
  };

  void Run();

  int epoll_fd_ = -1;
  int stop_fd_ = -1;  // eventfd in the epoll set: the destructor's stop
  std::mutex mu_;     // guards the three below
  bool stop_ = false;
  uint32_t registrations_ = 0;
  std::unordered_map<int, Watched> watched_;  // by socket; stale entries are overwritten
  std::thread thread_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_CLIENT_WATCHER_H_
