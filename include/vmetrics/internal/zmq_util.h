// SPDX-License-Identifier: Apache-2.0
// File: zmq_util.h
//
// Small ZeroMQ helpers shared by the engine-core client and the simulator: the socket options
// vLLM sets, binding with read-back of the real endpoint, multipart receive into reusable
// frames, and a self-pipe for waking a poll loop from any thread or a signal handler.
//
// Thread safety: the free functions are reentrant; a socket is still used by one thread at a
// time. WakePipe::Notify may be called from anywhere.
//
// Internal (include/vmetrics/internal/: shared by the libraries of this tree, not a stable API):
// the transport library's, also used by the simulator's engine sockets.
#ifndef VMETRICS_INTERNAL_ZMQ_UTIL_H_
#define VMETRICS_INTERNAL_ZMQ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "vmetrics/status.h"

namespace vmetrics::internal {

// Linger of the engine's sockets (vllm/v1/engine/core.py): handshake DEALER 5 s, output PUSH
// 4 s, so a final message (READY, ENGINE_CORE_DEAD) still leaves after close().
inline constexpr int kEngineHandshakeLingerMs = 5000;
inline constexpr int kEngineOutputLingerMs = 4000;
// Linger of the frontend's input ROUTER: how long closing it may wait for the ABORTs sent at
// shutdown to leave (docs/reliability.md §4.2).
inline constexpr int kShutdownAbortLingerMs = 1000;

// ConfigureSocket
//
// Applies what vLLM's make_zmq_socket applies (vllm/utils/network_utils.py): RCVHWM/SNDHWM 0
// (no limit: an engine must never block or drop an output because the frontend is slow),
// IPv6 for tcp://[...] addresses, and the given linger.
void ConfigureSocket(zmq::socket_t& socket, std::string_view address, int linger_ms);

// BindSocket
//
// Binds `socket` at `address` and stores the endpoint actually bound (ZMQ_LAST_ENDPOINT: the
// real port of "tcp://host:0"). Returns Socket(stage kBind, `detail`) naming `what` on
// failure.
Status BindSocket(zmq::socket_t& socket, const std::string& address, std::string_view what,
                  StatusDetail detail, std::string* endpoint);

// "tcp://0.0.0.0:5555" with host "10.0.0.2" -> "tcp://10.0.0.2:5555"; IPv6 hosts get
// brackets. Non-tcp endpoints are returned unchanged.
std::string ReplaceTcpHost(std::string_view endpoint, std::string_view host);

// RecvMultipart
//
// Receives one whole multipart message into frames[0..*count) (the vector only grows, so its
// messages are reused across calls). `flags` applies to the first frame (ZMQ_DONTWAIT to
// poll). Returns 1 for a message, 0 when none was waiting (EAGAIN), -1 on error with errno set.
// ZeroMQ delivers multipart messages atomically, so once the first frame is in, the rest are.
int RecvMultipart(void* socket, std::vector<zmq::message_t>* frames, size_t* count, int flags);

// The file descriptor of the connection a received message came from (ZMQ_SRCFD), -1 if
// unknown. Deprecated in libzmq in favour of "Peer-Address", which for ipc:// and for several
// connections from one host does not tell connections apart; the fd does.
int SourceFd(zmq::message_t& message);

// ConnectionKeyOf: tells apart the connections whose messages are still around (0 when the
// message has no metadata). It is the address of the "__fd" property of the message's
// metadata: libzmq gives every connection one metadata object, shared by all its messages and
// alive while any of them is (zmq_msg_gets returns a pointer into it, valid as long as the
// message). The fd itself is not enough — once a connection closes, its fd can go to a new
// connection while the old one's last messages are still queued.
uintptr_t ConnectionKeyOf(zmq::message_t& message);

// "05 00" for the identity bytes 0x05 0x00.
std::string FormatIdentity(std::string_view identity);

// "1, 2, 5" (at most 16 shown, then "... (+N more)").
std::string FormatIndexList(const std::vector<int>& indexes);

// WakePipe: a non-blocking self-pipe. Notify() makes read_fd() readable forever after (the
// byte is never drained: a stop is sticky). write(2) is async-signal-safe, which is why this
// is a pipe and not an inproc socket: a signal handler may stop the loop directly.
class WakePipe {
 public:
  WakePipe();
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;

  bool valid() const { return fds_[0] >= 0; }
  int read_fd() const { return fds_[0]; }
  void Notify() noexcept;
  // True once Notify() was called (polls the pipe without blocking).
  bool Notified() const;

 private:
  int fds_[2] = {-1, -1};
};

// Doorbell: an eventfd that Ring makes readable until Clear. Unlike WakePipe it is consumed:
// a "look again" signal for a poll loop, rung from any thread.
class Doorbell {
 public:
  Doorbell();
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  int fd() const { return fd_; }
  void Ring() const noexcept;
  void Clear() const noexcept;

 private:
  int fd_ = -1;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_ZMQ_UTIL_H_
