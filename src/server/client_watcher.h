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
// (`with_cancellation`), recording nothing. The watcher's one thread polls the sockets of the
// waiting exchanges for the peer's hang-up (POLLRDHUP, POLLHUP, POLLERR) and hands each to
// HttpExchange::ClientHungUp, which runs the client-gone callback (the abort) and lets
// libmicrohttpd close the connection.
//
// A client that shuts down only its sending side counts as gone too: a hang-up cannot be told
// from it without reading, and the request body was read in full before the wait.
//
// A socket is polled only while its exchange is suspended and waiting: libmicrohttpd does not
// close a suspended connection, and ClientHungUp checks that state again under the exchange's
// lock, so a socket number that was closed and reused is never acted on.
//
// Thread safety: Watch may be called from any thread; the destructor from one thread.
#ifndef VMETRICS_SERVER_CLIENT_WATCHER_H_
#define VMETRICS_SERVER_CLIENT_WATCHER_H_

#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "vmetrics/http_server.h"

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
  void Run();
  void Wake() const;

  int wake_fd_ = -1;  // eventfd: a new exchange, or stop
  std::mutex mu_;     // guards the two below
  bool stop_ = false;
  std::vector<std::weak_ptr<HttpExchange>> watched_;
  std::thread thread_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_CLIENT_WATCHER_H_
