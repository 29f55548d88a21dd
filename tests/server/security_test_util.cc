// SPDX-License-Identifier: Apache-2.0
#include "security_test_util.h"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

namespace vmetrics::security_test {
namespace {

std::string TakeDatum(gnutls_datum_t* datum) {
  std::string out(reinterpret_cast<const char*>(datum->data), datum->size);
  gnutls_free(datum->data);
  datum->data = nullptr;
  return out;
}

// Runs a GnuTLS call, failing the test with its name and reason when it returns an error.
bool Ok(int rc, const char* what) {
  if (rc >= 0) return true;
  ADD_FAILURE() << what << ": " << gnutls_strerror(rc);
  return false;
}

}  // namespace

TestCertificate MakeSelfSignedCertificate() {
  TestCertificate out;
  gnutls_x509_privkey_t key = nullptr;
  gnutls_x509_crt_t crt = nullptr;
  if (!Ok(gnutls_x509_privkey_init(&key), "privkey_init") ||
      !Ok(gnutls_x509_crt_init(&crt), "crt_init")) {
    if (key != nullptr) gnutls_x509_privkey_deinit(key);
    return out;
  }
  unsigned char serial[8];
  const unsigned char loopback[4] = {127, 0, 0, 1};
  const time_t now = time(nullptr);
  constexpr std::string_view kName = "localhost";
  bool ok = Ok(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                            GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
               "privkey_generate") &&
            Ok(gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial), "rnd") &&
            Ok(gnutls_x509_crt_set_version(crt, 3), "set_version");
  serial[0] &= 0x7F;  // a positive serial number
  ok = ok && Ok(gnutls_x509_crt_set_serial(crt, serial, sizeof serial), "set_serial") &&
       Ok(gnutls_x509_crt_set_activation_time(crt, now - 3600), "set_activation_time") &&
       Ok(gnutls_x509_crt_set_expiration_time(crt, now + 86400), "set_expiration_time") &&
       Ok(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, kName.data(),
                                        kName.size()),
          "set_dn") &&
       Ok(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, kName.data(), kName.size(),
                                               GNUTLS_FSAN_APPEND),
          "san_dns") &&
       Ok(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, loopback, sizeof loopback,
                                               GNUTLS_FSAN_APPEND),
          "san_ip") &&
       // Its own CA, so clients that want a CA in their trust store (OpenSSL's) accept it.
       Ok(gnutls_x509_crt_set_basic_constraints(crt, 1, -1), "basic_constraints") &&
       Ok(gnutls_x509_crt_set_key_usage(crt,
                                        GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_CERT_SIGN),
          "key_usage") &&
       Ok(gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0), "purpose") &&
       Ok(gnutls_x509_crt_set_key(crt, key), "set_key") &&
       Ok(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), "sign");
  gnutls_datum_t pem{};
  if (ok && Ok(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem), "crt_export")) {
    out.cert_pem = TakeDatum(&pem);
  }
  if (ok && Ok(gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, nullptr,
                                                 GNUTLS_PKCS_PLAIN, &pem),
               "key_export")) {
    out.key_pem = TakeDatum(&pem);
  }
  gnutls_x509_crt_deinit(crt);
  gnutls_x509_privkey_deinit(key);
  return out;
}

TlsExchangeResult TlsExchange(uint16_t port, std::string_view raw,
                              const TlsClientOptions& options) {
  TlsExchangeResult result;
  const int fd = http_test::ConnectTo("127.0.0.1", port);
  if (fd < 0) return result;
  result.connected = true;

  gnutls_certificate_credentials_t credentials = nullptr;
  gnutls_session_t session = nullptr;
  const gnutls_datum_t trusted{
      reinterpret_cast<unsigned char*>(const_cast<char*>(options.trusted_pem.data())),
      static_cast<unsigned int>(options.trusted_pem.size())};
  bool ok =
      Ok(gnutls_certificate_allocate_credentials(&credentials), "credentials") &&
      Ok(gnutls_certificate_set_x509_trust_mem(credentials, &trusted, GNUTLS_X509_FMT_PEM),
         "trust") &&
      Ok(gnutls_init(&session, GNUTLS_CLIENT), "init") &&
      Ok(gnutls_priority_set_direct(session, options.priorities.c_str(), nullptr), "priority") &&
      Ok(gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, credentials), "credentials_set") &&
      Ok(gnutls_server_name_set(session, GNUTLS_NAME_DNS, options.server_name.data(),
                                options.server_name.size()),
         "server_name");
  if (ok) {
    gnutls_session_set_verify_cert(session, options.server_name.c_str(), 0);
    gnutls_transport_set_int(session, fd);
    gnutls_handshake_set_timeout(session, 10000);
    int rc = 0;
    do {
      rc = gnutls_handshake(session);
    } while (rc < 0 && gnutls_error_is_fatal(rc) == 0 && rc != GNUTLS_E_AGAIN);
    if (rc < 0) {
      result.error = gnutls_strerror(rc);
    } else {
      result.handshake_ok = true;
      const char* protocol = gnutls_protocol_get_name(gnutls_protocol_get_version(session));
      result.protocol = protocol != nullptr ? protocol : "";
    }
  }
  if (result.handshake_ok) {
    std::string_view rest = raw;
    while (!rest.empty()) {
      const ssize_t sent = gnutls_record_send(session, rest.data(), rest.size());
      if (sent == GNUTLS_E_INTERRUPTED) continue;
      if (sent <= 0) break;
      rest.remove_prefix(static_cast<size_t>(sent));
    }
    // The socket's receive timeout makes GnuTLS return E_AGAIN: that is the end, not a retry.
    auto receive_more = [session](std::string* buffer) {
      char chunk[16384];
      for (;;) {
        const ssize_t got = gnutls_record_recv(session, chunk, sizeof chunk);
        if (got == GNUTLS_E_INTERRUPTED) continue;
        if (got <= 0) return false;
        buffer->append(chunk, static_cast<size_t>(got));
        return true;
      }
    };
    std::string buffer;
    http_test::ReadResponse(receive_more, options.head, &buffer, &result.response);
    result.response.connected = true;
    gnutls_bye(session, GNUTLS_SHUT_WR);
  }
  if (session != nullptr) gnutls_deinit(session);
  if (credentials != nullptr) gnutls_certificate_free_credentials(credentials);
  close(fd);
  return result;
}

std::string BcryptHash(const std::string& password, const char* prefix, unsigned long cost) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn(prefix, cost, nullptr, 0, setting, sizeof setting) == nullptr) {
    ADD_FAILURE() << "crypt_gensalt_rn(" << prefix << ", " << cost << ") failed";
    return "";
  }
  auto scratch = std::make_unique<crypt_data>();
  const char* hash = crypt_rn(password.c_str(), setting, scratch.get(), sizeof *scratch);
  if (hash == nullptr) {
    ADD_FAILURE() << "crypt_rn failed for setting " << setting;
    return "";
  }
  return hash;
}

std::string Base64(std::string_view bytes) {
  constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    unsigned bits = 0;
    for (size_t j = 0; j < 3; ++j) {
      bits = (bits << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    }
    for (size_t j = 0; j < 4; ++j) {
      out.push_back(j <= n ? kAlphabet[(bits >> (18 - 6 * j)) & 0x3F] : '=');
    }
  }
  return out;
}

std::string BasicAuthorization(std::string_view user, std::string_view password) {
  std::string pair(user);
  pair += ':';
  pair += password;
  return "Basic " + Base64(pair);
}

ScratchDirectory::ScratchDirectory() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/vmetrics-server-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
    return;
  }
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDirectory::WriteFile(const std::string& name, std::string_view content) const {
  const std::string file = path_ + "/" + name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  EXPECT_TRUE(out.good()) << "cannot write " << file;
  return file;
}

}  // namespace vmetrics::security_test
