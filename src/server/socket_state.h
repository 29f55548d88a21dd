// SPDX-License-Identifier: Apache-2.0
// File: socket_state.h (internal to src/server)
//
// What the kernel knows about a connected TCP socket that the HTTP server's own bookkeeping
// cannot: whether the peer closed or reset it, and how many bytes it has sent and taken. The
// connection guard (connection_guard.h) asks, from its own thread, about sockets libmicrohttpd
// serves; both calls only read, so asking about a socket another thread uses is harmless.
//
// Thread safety: pure system calls.
#ifndef VMETRICS_SERVER_SOCKET_STATE_H_
#define VMETRICS_SERVER_SOCKET_STATE_H_

#include <cstddef>
#include <cstdint>

namespace vmetrics::internal {

struct SocketState {
  bool known = false;           // false: not a TCP socket (or the call failed); nothing below
  bool peer_closed = false;     // CLOSE_WAIT: the peer sent FIN, it sends nothing more
  bool reset = false;           // CLOSED: reset by the peer (or otherwise gone), only an fd left
  bool bytes_known = false;     // bytes_received and bytes_acked are set (Linux 4.1 and later)
  uint64_t bytes_received = 0;  // bytes the peer has sent on this connection so far
  uint64_t bytes_acked = 0;     // bytes the peer has acknowledged receiving so far
};

// ReadSocketState: one getsockopt(TCP_INFO).
SocketState ReadSocketState(int fd);

// UnreadBytes: bytes received but not yet read by the application (FIONREAD); 0 on error.
size_t UnreadBytes(int fd);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_SOCKET_STATE_H_
