// SPDX-License-Identifier: Apache-2.0
// File: socket_monitor.h
//
// SocketMonitor: a ZeroMQ socket monitor (zmq_socket_monitor) read without blocking. The
// client watches the input ROUTER to see engines' connections close, and the output PULL to
// notice a file descriptor being reused by a new connection.
//
// Thread safety: one thread at a time (it owns a PAIR socket).
#ifndef VMETRICS_TRANSPORT_SOCKET_MONITOR_H_
#define VMETRICS_TRANSPORT_SOCKET_MONITOR_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <zmq.hpp>

#include "vmetrics/engine_core_client.h"

namespace vmetrics::internal {

struct MonitorEvent {
  uint16_t event = 0;  // ZMQ_EVENT_*
  int32_t value = 0;   // the connection's fd for ACCEPTED and DISCONNECTED
};

class SocketMonitor {
 public:
  SocketMonitor() = default;
  ~SocketMonitor() = default;
  SocketMonitor(const SocketMonitor&) = delete;
  SocketMonitor& operator=(const SocketMonitor&) = delete;

  // Starts monitoring `watched` for `events` (a ZMQ_EVENT_* mask) through a fresh inproc
  // endpoint. Returns Socket on failure.
  Status Attach(zmq::context_t& context, zmq::socket_t& watched, int events);
  // Stops monitoring and closes the reading socket. Must run before `watched` is closed.
  void Detach(zmq::socket_t& watched);

  bool attached() const { return attached_; }
  // The PAIR socket to put in a poll set.
  void* handle() { return reader_.handle(); }

  // The next pending event, without waiting; nullopt when none is waiting.
  std::optional<MonitorEvent> Next();

 private:
  zmq::socket_t reader_;
  bool attached_ = false;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_TRANSPORT_SOCKET_MONITOR_H_
