// SPDX-License-Identifier: Apache-2.0
// File: security_test_util.h
//
// What the TLS and basic-auth tests need, all made at test time so nothing secret is
// committed and nothing expires: a self-signed certificate and key (GnuTLS), an HTTPS client
// over GnuTLS that shares http_test_client's response parser, bcrypt hashes (libcrypt, cost 4
// so tests stay fast), the value of a Basic Authorization header, and a scratch folder.
//
// Thread safety: every call is independent; call from any thread.
#ifndef VMETRICS_TESTS_SERVER_SECURITY_TEST_UTIL_H_
#define VMETRICS_TESTS_SERVER_SECURITY_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "http_test_client.h"

namespace vmetrics::security_test {

struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8, unencrypted
};

// MakeSelfSignedCertificate
//
// A fresh ECDSA P-256 key and a self-signed certificate for it, valid from an hour ago for a
// day, for the DNS name "localhost" and the address 127.0.0.1, usable as a TLS server
// certificate and as its own trust anchor. Fails the current test (and returns empty PEMs) if
// GnuTLS refuses.
//
// Example:
//   TestCertificate cert = MakeSelfSignedCertificate();
//   EXPECT_NE(cert.cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
TestCertificate MakeSelfSignedCertificate();

struct TlsClientOptions {
  std::string trusted_pem;                // the certificates the client trusts (PEM)
  std::string server_name = "localhost";  // sent as SNI and checked against the certificate
  std::string priorities = "NORMAL";      // GnuTLS priority string, e.g. to force TLS 1.2
  bool head = false;                      // the request is HEAD
};

struct TlsExchangeResult {
  bool connected = false;     // the TCP connection was accepted
  bool handshake_ok = false;  // TLS handshake done and the certificate verified
  std::string error;          // GnuTLS's reason when the handshake failed
  std::string protocol;       // "TLS1.3", "TLS1.2" once the handshake is done
  http_test::HttpResponse response;
};

// TlsExchange
//
// Connects to 127.0.0.1:port, does a TLS handshake that verifies the server against
// options.trusted_pem and options.server_name, sends `raw` and reads one response (as
// http_test::Exchange does in the clear). Every step is bounded by the client's 10 s timeouts.
//
// Example:
//   TlsExchangeResult r = TlsExchange(port, Request("GET", "/metrics"), {.trusted_pem = pem});
//   ASSERT_TRUE(r.handshake_ok) << r.error;
//   EXPECT_EQ(r.response.status, 200);
TlsExchangeResult TlsExchange(uint16_t port, std::string_view raw, const TlsClientOptions& options);

// BcryptHash
//
// The bcrypt hash of `password` with a random salt, made by libcrypt with `prefix` ("$2b$",
// "$2y$" or "$2a$") at `cost` (4, the minimum, keeps a verification near a millisecond).
// Fails the current test and returns "" if libcrypt refuses.
//
// Example:
//   EXPECT_EQ(BcryptHash("secret").substr(0, 7), "$2b$04$");
std::string BcryptHash(const std::string& password, const char* prefix = "$2b$",
                       unsigned long cost = 4);

// BasicAuthorization: "Basic " + base64(user + ":" + password).
//
// Example:
//   EXPECT_EQ(BasicAuthorization("alice", "secret"), "Basic YWxpY2U6c2VjcmV0");
std::string BasicAuthorization(std::string_view user, std::string_view password);

// Base64: standard alphabet with padding.
std::string Base64(std::string_view bytes);

// ScratchDirectory
//
// A new empty folder under $TMPDIR (or /tmp), removed with everything in it when the object
// goes. WriteFile puts `content` in `name` inside it and returns the full path.
class ScratchDirectory {
 public:
  ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory();

  const std::string& path() const { return path_; }
  std::string WriteFile(const std::string& name, std::string_view content) const;

 private:
  std::string path_;
};

}  // namespace vmetrics::security_test

#endif  // VMETRICS_TESTS_SERVER_SECURITY_TEST_UTIL_H_
