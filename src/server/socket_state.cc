// SPDX-License-Identifier: Apache-2.0
// TCP_INFO and FIONREAD for the connection guard; see socket_state.h. Kept apart because
// <linux/tcp.h> (which has tcpi_bytes_received; glibc's <netinet/tcp.h> does not) cannot be
// included next to <netinet/tcp.h>.
#include "socket_state.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstddef>

namespace vmetrics::internal {
namespace {

// tcpi_state values: the kernel's TCP states (the Linux header tcp_states.h, a stable ABI;
// glibc names them in <netinet/tcp.h>, which cannot be included here).
constexpr uint8_t kTcpClose = 7;
constexpr uint8_t kTcpCloseWait = 8;

}  // namespace

SocketState ReadSocketState(int fd) {
  SocketState state;
  tcp_info info{};
  socklen_t length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0 ||
      length < offsetof(tcp_info, tcpi_state) + sizeof info.tcpi_state) {
    return state;
  }
  state.known = true;
  state.peer_closed = info.tcpi_state == kTcpCloseWait;
  state.reset = info.tcpi_state == kTcpClose;
  if (length >= offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) {
    state.bytes_known = true;
    state.bytes_received = info.tcpi_bytes_received;
    // Before tcpi_bytes_received in the struct, so present whenever it is.
    state.bytes_acked = info.tcpi_bytes_acked;
  }
  return state;
}

size_t UnreadBytes(int fd) {
  int unread = 0;
  if (ioctl(fd, FIONREAD, &unread) != 0 || unread < 0) return 0;
  return static_cast<size_t>(unread);
}

}  // namespace vmetrics::internal
