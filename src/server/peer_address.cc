// SPDX-License-Identifier: Apache-2.0
// Client addresses as keys and text; see peer_address.h.
#include "peer_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace vmetrics::internal {

std::string PeerAddressKey(const sockaddr* peer) {
  if (peer == nullptr) return std::string();
  if (peer->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(peer);
    std::string key(1, '4');
    key.append(reinterpret_cast<const char*>(&v4->sin_addr), sizeof v4->sin_addr);
    return key;
  }
  if (peer->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(peer);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      std::string key(1, '4');
      key.append(reinterpret_cast<const char*>(&v6->sin6_addr) + 12, 4);
      return key;
    }
    std::string key(1, '6');
    key.append(reinterpret_cast<const char*>(&v6->sin6_addr), sizeof v6->sin6_addr);
    return key;
  }
  return std::string();
}

std::string PeerNetworkKey(const sockaddr* peer) {
  std::string key = PeerAddressKey(peer);
  // '6' and the address's 16 bytes: keep the first 8, the /64.
  if (key.size() == 17 && key[0] == '6') key.resize(9);
  return key;
}

std::string DescribePeerAddressKey(const std::string& key) {
  if (key.size() == 9 && key[0] == '6') {
    std::string full = key;
    full.resize(17, '\0');
    return DescribePeerAddressKey(full) + "/64";
  }
  char text[INET6_ADDRSTRLEN] = "?";
  if (key.size() == 5 && key[0] == '4') {
    in_addr a{};
    std::memcpy(&a, key.data() + 1, 4);
    inet_ntop(AF_INET, &a, text, sizeof text);
  } else if (key.size() == 17 && key[0] == '6') {
    in6_addr a{};
    std::memcpy(&a, key.data() + 1, 16);
    inet_ntop(AF_INET6, &a, text, sizeof text);
  }
  return text;
}

}  // namespace vmetrics::internal
