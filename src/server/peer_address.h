// SPDX-License-Identifier: Apache-2.0
// File: peer_address.h (internal to src/server)
//
// PeerAddress: the address a client connects from, as a key that tells clients apart (per
// address connection limits; fair bcrypt checks, by network) and as text for logs. The port is left
// out: one client opens many connections from many ports. An IPv4 client of a dual-stack listener
// ("::") appears as an IPv4-mapped IPv6 address (::ffff:a.b.c.d); it is keyed as the IPv4
// address it is, so it shares its limits with the same client on an IPv4 listener.
//
// Thread safety: pure functions.
#ifndef VMETRICS_SERVER_PEER_ADDRESS_H_
#define VMETRICS_SERVER_PEER_ADDRESS_H_

#include <sys/socket.h>

#include <string>

namespace vmetrics::internal {

// PeerAddressKey
//
// A few bytes naming the address of `peer` (family and address, no port): equal for two
// connections from the same address. "" for a null pointer or a family other than IPv4 and
// IPv6 (such clients share one key).
//
// Example:
//   sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(1);
//   sockaddr_in b = a; b.sin_port = htons(2);
//   EXPECT_EQ(PeerAddressKey(reinterpret_cast<sockaddr*>(&a)),
//             PeerAddressKey(reinterpret_cast<sockaddr*>(&b)));
std::string PeerAddressKey(const sockaddr* peer);

// PeerNetworkKey
//
// As PeerAddressKey, but an IPv6 client is keyed by its /64: one host is usually given a
// whole /64 and may pick any address in it, so telling its addresses apart would let it pass
// for thousands of clients. IPv4 clients (mapped ones included) keep their address. Used where
// clients take turns (the bcrypt checks); the connection limits stay per address, since
// clients behind one /64 (a LAN) each hold connections of their own.
//
// Example:
//   // 2001:db8::1 and 2001:db8::2 are one network, 2001:db8:0:1::1 another
//   EXPECT_EQ(PeerNetworkKey(a), PeerNetworkKey(b));
//   EXPECT_NE(PeerNetworkKey(a), PeerNetworkKey(c));
std::string PeerNetworkKey(const sockaddr* peer);

// DescribePeerAddressKey
//
// The numeric text of a key made by PeerAddressKey ("127.0.0.1", "::1") or PeerNetworkKey
// ("2001:db8::/64"); "?" for "".
//
// Example:
//   EXPECT_EQ(DescribePeerAddressKey(PeerAddressKey(loopback)), "127.0.0.1");
std::string DescribePeerAddressKey(const std::string& key);

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_PEER_ADDRESS_H_
