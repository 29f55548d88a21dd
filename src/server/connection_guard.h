// SPDX-License-Identifier: Apache-2.0
// File: connection_guard.h (internal to src/server)
//
// ConnectionGuard: decides which connections the HTTP server keeps, so that no number of slow,
// idle, half-closed or vanished clients can keep a scrape out.
//
// Why: libmicrohttpd bounds connections by count and closes one only after
// connection_timeout_s without any traffic. Measured against 0.9.75 (docs/reliability.md):
// about 1,030 clients that each send one byte every 10 s (so the idle timeout never fires)
// held every connection slot, and every scrape waited in the kernel's accept queue for as
// long as they lasted; after `wrk -c2000` stopped, libmicrohttpd kept about 1,000 connections
// whose clients were gone (reset while it was writing to them) and noticed only at the idle
// timeout, about 28 s, during which every scrape timed out. So the server keeps its own
// account of every connection (libmicrohttpd tells it of each one opened and closed, and the
// server of each request's progress) and acts on it:
//
//   Admission. A new connection from an address that has max_per_address connections, or
//   arriving when max_connections are open, takes the place of the connection that has waited
//   longest for a request (idle between requests, or still sending its request line and
//   headers): that one is closed. A connection that is busy (its request read, or being
//   answered) is never closed to make room. When every connection is busy, the new one is
//   admitted into a small reserve (scrape_reserve) that serves /metrics and /health only
//   (HttpServer answers anything else 503 there), so Prometheus can always scrape; past the
//   reserve it is refused. Closing a waiting connection costs its client a reconnect; keeping
//   it would cost a scrape.
//
//   Light clients. Busy connections are never closed, so a few addresses with many long
//   requests (1,024 from two addresses, measured) could hold every connection and every other
//   client got 503. So the last light_reserve connections are kept for addresses holding
//   fewer than light_client_connections: an address holding more, once max_connections -
//   light_reserve are open, only takes the place of its own waiting connections, else goes to
//   the scrape reserve like a client of a full server.
//
//   Deadlines. A request must be sent whole (request line, headers, body) within
//   request_timeout of its first byte, and a reply must be read whole within request_timeout
//   of being ready; past either the connection is closed. The kernel's count of bytes received
//   (TCP_INFO) tells when a request begins, so a client cannot stretch one by sending a byte at
//   a time, and a keep-alive connection may still wait any time between requests (the idle
//   timeout bounds that). A request a route's handler is answering (an engine generating) is
//   not timed: it waits for the engine, not for the client. A stream is timed only while bytes
//   (or its end) wait for the client: one whose client has taken none for stream_write_timeout
//   is cut (HttpExchange::CutIfStalled), so a client that stopped reading cannot hold a
//   connection and the stream's engine work for as long as the engine generates.
//
//   Vanished clients. A connection whose client reset it, or closed its side while the server
//   waited for a request and nothing is left unread (seen on two sweeps, so a request being
//   parsed is never cut), is closed at once. libmicrohttpd 0.9.75 did not notice such
//   connections until the idle timeout.
//
// Closing means shutdown(SHUT_RDWR) on the socket from the guard's own thread (or the worker
// admitting a connection): libmicrohttpd then finds the socket closed and frees the connection
// in its next loop (the kernel wakes its epoll even for a socket already reset). The guard
// only touches a socket between libmicrohttpd's notice that the connection opened and its
// notice that it closed (which comes before close()), under one lock, so it never acts on a
// descriptor that was closed and reused.
//
// A sweep runs every sweep_interval (the deadlines are therefore kept to within one interval):
// one getsockopt per connection not busy with a route's answer, about a microsecond each.
//
// Thread safety: every method may be called from any thread. Opened, the transitions and
// Closed of one connection come from the libmicrohttpd worker that owns it, in that order.
#ifndef VMETRICS_SERVER_CONNECTION_GUARD_H_
#define VMETRICS_SERVER_CONNECTION_GUARD_H_

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "error_log.h"
#include "vmetrics/http_server.h"

namespace vmetrics::internal {

struct ConnectionLimits {
  size_t max_connections = 1024;  // ordinary connections open at once (>= 1)
  size_t max_per_address = 0;     // connections open at once from one address; 0 = no limit
  size_t scrape_reserve = 0;      // more, for /metrics and /health only, when all are busy
  // Of max_connections, kept for addresses that hold fewer than light_client_connections: an
  // address holding more is admitted (past its own waiting connections) only while fewer than
  // max_connections - light_reserve are open. 0 = none.
  size_t light_reserve = 0;
  size_t light_client_connections = 4;
  std::chrono::steady_clock::duration request_timeout{};  // zero = no deadlines
  // A stream whose client takes no bytes for this long while some wait is cut; zero = never.
  std::chrono::steady_clock::duration stream_write_timeout{};
  std::chrono::steady_clock::duration sweep_interval = std::chrono::milliseconds(200);
};

class ConnectionGuard {
 public:
  using Clock = std::chrono::steady_clock;

  // One connection's account. Opaque outside the guard; the server keeps the pointer in
  // libmicrohttpd's socket context. Valid from Opened until Closed returns.
  struct Connection;

  // Starts the sweeping thread. `log` (may be null) receives the closings worth an operator's
  // attention (evictions, refusals, deadlines; not vanished clients) and is flushed on every
  // sweep; it must outlive the guard.
  ConnectionGuard(ConnectionLimits limits, ErrorLog* log);
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;
  // Stops and joins the thread.
  ~ConnectionGuard();

  // Opened
  //
  // libmicrohttpd accepted connection `fd` from `peer`: admits it (as above), closing another
  // connection to make room, or closes this one when there is none. Returns its account, which
  // Closed must be given back in the end (also for a refused one).
  Connection* Opened(int fd, const sockaddr* peer);

  // Closed: libmicrohttpd is about to close `connection`'s socket. Frees the account.
  void Closed(Connection* connection);

  // True when `connection` was admitted into the scrape reserve: it may ask for /metrics and
  // /health only. Constant from Opened on; read without the lock.
  static bool ScrapeOnly(const Connection* connection);

  // The request's progress, for the deadlines.
  void HeadReceived(Connection* connection);    // its request line and headers are in
  void AwaitingAnswer(Connection* connection);  // a route's handler answers it: not timed
  void Replying(Connection* connection);        // a whole reply is queued: to be read in time
  // A stream began, sent from `stream`: timed by stream_write_timeout while bytes wait.
  void Streaming(Connection* connection, std::weak_ptr<HttpExchange> stream);
  void RequestDone(Connection* connection);  // the request is over; the next may come

  struct Counts {
    size_t open = 0;         // admitted and not closed by the guard (reserve included)
    size_t scrape_only = 0;  // of which in the scrape reserve
    uint64_t evicted = 0;    // closed waiting connections to admit new ones
    uint64_t refused = 0;    // new connections closed: every connection was busy
    uint64_t timed_out = 0;  // closed past a deadline (streams' write deadline included)
    uint64_t vanished = 0;   // closed because their client had gone
  };
  Counts counts() const;

  // Runs a sweep now, on the calling thread; the guard's thread runs one every
  // sweep_interval. For tests.
  void SweepNow();

 private:
  enum class Reason : uint8_t {
    kEvictedForAddress,
    kEvicted,
    kRefused,
    kRequestTimeout,
    kReplyTimeout,
    kStreamStalled,
    kVanished
  };

  void Run();
  void Sweep(Clock::time_point now);
  // With mu_ held. Shuts `connection`'s socket down and takes it off the books; a note for the
  // log goes to `notes` (written after the lock is released).
  void CloseLocked(Connection* connection, Reason reason,
                   std::vector<std::pair<const char*, std::string>>* notes);
  // With mu_ held. Counts a closing for `reason` and adds its note for the log.
  void NoteLocked(Reason reason, const std::string& address,
                  std::vector<std::pair<const char*, std::string>>* notes);
  void LinkWaitingLocked(Connection* connection);
  void UnlinkWaitingLocked(Connection* connection);
  // The connection that has waited longest for a request and passes `eligible`, or null.
  template <typename Eligible>
  Connection* OldestWaitingLocked(Eligible eligible) const;
  void WriteNotes(const std::vector<std::pair<const char*, std::string>>& notes);

  const ConnectionLimits limits_;
  ErrorLog* const log_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  // Waiting connections, the one waiting longest first (intrusive, through Connection).
  Connection* waiting_head_ = nullptr;
  Connection* waiting_tail_ = nullptr;
  size_t ordinary_open_ = 0;
  size_t reserve_open_ = 0;
  std::map<std::string, size_t> per_address_;  // admitted connections not yet closed, by address
  Counts counts_;                              // the totals (open and scrape_only unused)

  std::thread thread_;  // last: started once everything above is ready
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_CONNECTION_GUARD_H_
