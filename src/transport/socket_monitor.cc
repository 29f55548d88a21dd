// SPDX-License-Identifier: Apache-2.0
#include "socket_monitor.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace vmetrics::internal {

Status SocketMonitor::Attach(zmq::context_t& context, zmq::socket_t& watched, int events) {
  // inproc names are per context, but one context may hold several clients in tests.
  static std::atomic<uint64_t> next_id{0};
  const std::string endpoint = "inproc://vmetrics-monitor-" + std::to_string(next_id.fetch_add(1));
  if (zmq_socket_monitor(watched.handle(), endpoint.c_str(), events) != 0) {
    return Status::Socket(StatusStage::kBind,
                          std::string("cannot monitor socket: ") + zmq_strerror(zmq_errno()));
  }
  try {
    reader_ = zmq::socket_t(context, zmq::socket_type::pair);
    reader_.set(zmq::sockopt::linger, 0);
    reader_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    zmq_socket_monitor(watched.handle(), nullptr, 0);
    return Status::Socket(StatusStage::kBind,
                          std::string("cannot read socket monitor: ") + e.what());
  }
  attached_ = true;
  return Status::Ok();
}

void SocketMonitor::Detach(zmq::socket_t& watched) {
  if (!attached_) return;
  zmq_socket_monitor(watched.handle(), nullptr, 0);
  reader_.close();
  attached_ = false;
}

std::optional<MonitorEvent> SocketMonitor::Next() {
  if (!attached_) return std::nullopt;
  for (;;) {
    zmq::message_t header;
    int rc = zmq_msg_recv(header.handle(), reader_.handle(), ZMQ_DONTWAIT);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;  // EAGAIN: nothing waiting (or the context is going away)
    }
    // A monitor event is two frames: [u16 event, u32 value] in host order, then the endpoint.
    MonitorEvent ev;
    const bool well_formed = header.size() == 6;
    if (well_formed) {
      std::memcpy(&ev.event, header.data(), 2);
      std::memcpy(&ev.value, static_cast<const char*>(header.data()) + 2, 4);
    }
    bool more = header.more();
    while (more) {
      zmq::message_t rest;
      if (zmq_msg_recv(rest.handle(), reader_.handle(), 0) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      more = rest.more();
    }
    if (well_formed) return ev;
  }
}

}  // namespace vmetrics::internal
