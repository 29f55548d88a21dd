// SPDX-License-Identifier: Apache-2.0
// PeerAddressKey and PeerNetworkKey (src/server/peer_address.h): which clients share a key.
#include "peer_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

namespace vmetrics::internal {
namespace {

sockaddr_in6 V6(const char* text, uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, text, &a.sin6_addr);
  return a;
}

sockaddr_in V4(const char* text, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

const sockaddr* Peer(const sockaddr_in6& a) { return reinterpret_cast<const sockaddr*>(&a); }
const sockaddr* Peer(const sockaddr_in& a) { return reinterpret_cast<const sockaddr*>(&a); }

TEST(PeerNetworkKey, IPv6ClientsShareTheirSlash64AndIPv4ClientsKeepTheirAddress) {
  const sockaddr_in6 a = V6("2001:db8::1", 1);
  const sockaddr_in6 b = V6("2001:db8::ffff:2", 2);
  const sockaddr_in6 other_network = V6("2001:db8:0:1::1", 1);
  EXPECT_NE(PeerAddressKey(Peer(a)), PeerAddressKey(Peer(b)));
  EXPECT_EQ(PeerNetworkKey(Peer(a)), PeerNetworkKey(Peer(b)));
  EXPECT_NE(PeerNetworkKey(Peer(a)), PeerNetworkKey(Peer(other_network)));
  EXPECT_EQ(DescribePeerAddressKey(PeerNetworkKey(Peer(a))), "2001:db8::/64");

  const sockaddr_in v4 = V4("192.0.2.7", 1);
  const sockaddr_in v4_neighbour = V4("192.0.2.8", 1);
  const sockaddr_in6 mapped = V6("::ffff:192.0.2.7", 3);
  EXPECT_EQ(PeerNetworkKey(Peer(v4)), PeerAddressKey(Peer(v4)));
  EXPECT_NE(PeerNetworkKey(Peer(v4)), PeerNetworkKey(Peer(v4_neighbour)));
  EXPECT_EQ(PeerNetworkKey(Peer(mapped)), PeerNetworkKey(Peer(v4)));
  EXPECT_EQ(DescribePeerAddressKey(PeerNetworkKey(Peer(v4))), "192.0.2.7");
  EXPECT_EQ(PeerNetworkKey(nullptr), "");
}

}  // namespace
}  // namespace vmetrics::internal
