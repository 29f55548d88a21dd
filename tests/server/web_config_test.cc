// SPDX-License-Identifier: Apache-2.0
// LoadWebConfig, ParseWebConfig and ValidateWebConfig (src/server/web_config.cc): the files
// that load, and one test per way a file can be refused, checking the code and that the
// message names the key (and line) to fix.
#include "vmetrics/web_config.h"

#include <gtest/gtest.h>

#include <string>

#include "security_test_util.h"

namespace vmetrics {
namespace {

using security_test::BcryptHash;
using security_test::MakeSelfSignedCertificate;
using security_test::ScratchDirectory;
using security_test::TestCertificate;

class WebConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = MakeSelfSignedCertificate();
    dir_.WriteFile("server.crt", cert_.cert_pem);
    dir_.WriteFile("server.key", cert_.key_pem);
  }

  Result<WebConfig> Parse(std::string_view yaml) { return ParseWebConfig(yaml, dir_.path()); }

  // The refusal of `yaml`: code, then the message.
  std::string Refusal(std::string_view yaml) {
    Result<WebConfig> config = Parse(yaml);
    return config.ok() ? "accepted" : config.status().ToString();
  }

  ScratchDirectory dir_;
  TestCertificate cert_;
  const std::string hash_ = BcryptHash("secret");
};

// ---- files that load ----

TEST_F(WebConfigTest, EmptyFileChangesNothing) {
  for (std::string_view yaml : {"", "# nothing\n", "---\n",
                                "tls_server_config:\n"
                                "basic_auth_users:\n"
                                "http_server_config:\n"}) {
    Result<WebConfig> config = Parse(yaml);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_FALSE(config->tls.has_value());
    EXPECT_TRUE(config->basic_auth_users.empty());
    EXPECT_TRUE(config->headers.empty());
  }
}

TEST_F(WebConfigTest, FullFileWithRelativePathsResolvedAgainstItsFolder) {
  Result<WebConfig> config = Parse(
      "# As node_exporter would take it.\n"
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: 'server.key'\n"
      "  client_auth_type: NoClientCert\n"
      "  min_version: TLS12\n"
      "  max_version: TLS13\n"
      "  prefer_server_cipher_suites: true\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    X-Frame-Options: deny\n"
      "    Content-Security-Policy: \"default-src 'none'\"\n"
      "    X-XSS-Protection: ''\n"
      "basic_auth_users:\n"
      "  prometheus: " +
      hash_ +
      "\n"
      "  \"grafana agent\": '" +
      hash_ + "'\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->tls.has_value());
  EXPECT_EQ(config->tls->cert_file, dir_.path() + "/server.crt");
  EXPECT_EQ(config->tls->key_file, dir_.path() + "/server.key");
  EXPECT_EQ(config->tls->cert_pem, cert_.cert_pem);
  EXPECT_EQ(config->tls->key_pem, cert_.key_pem);
  EXPECT_EQ(config->tls->min_version, TlsVersion::kTls12);
  EXPECT_EQ(config->tls->max_version, TlsVersion::kTls13);
  ASSERT_EQ(config->basic_auth_users.size(), 2u);
  EXPECT_EQ(config->basic_auth_users.at("prometheus"), hash_);
  EXPECT_EQ(config->basic_auth_users.at("grafana agent"), hash_);
  // In file order; an empty value is "unset if blank", as in exporter-toolkit.
  const std::vector<std::pair<std::string, std::string>> expected_headers = {
      {"X-Frame-Options", "deny"}, {"Content-Security-Policy", "default-src 'none'"}};
  EXPECT_EQ(config->headers, expected_headers);
  EXPECT_TRUE(ValidateWebConfig(*config).ok());
}

TEST_F(WebConfigTest, AbsolutePathsAreKept) {
  ScratchDirectory elsewhere;
  const std::string cert = elsewhere.WriteFile("c.pem", cert_.cert_pem);
  const std::string key = elsewhere.WriteFile("k.pem", cert_.key_pem);
  Result<WebConfig> config =
      Parse("tls_server_config:\n  cert_file: " + cert + "\n  key_file: " + key + "\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->tls->cert_file, cert);
}

TEST_F(WebConfigTest, TlsWithBothFilesEmptyMeansPlainHttp) {
  Result<WebConfig> config = Parse("tls_server_config:\n  cert_file: ''\n  key_file:\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->tls.has_value());
}

TEST_F(WebConfigTest, TlsThirteenOnly) {
  Result<WebConfig> config = Parse(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "  min_version: TLS13\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->tls->min_version, TlsVersion::kTls13);
}

TEST_F(WebConfigTest, EveryBcryptVariantLoads) {
  for (const char* prefix : {"$2a$", "$2b$", "$2y$"}) {
    const std::string hash = BcryptHash("pw", prefix);
    Result<WebConfig> config = Parse("basic_auth_users:\n  u: " + hash + "\n");
    EXPECT_TRUE(config.ok()) << prefix << ": " << config.status().ToString();
  }
  // exporter-toolkit's own decoy hash, a $2y$ at cost 10.
  EXPECT_TRUE(Parse("basic_auth_users:\n  u: "
                    "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n")
                  .ok());
}

TEST_F(WebConfigTest, LoadWebConfigReadsTheFileAndResolvesAgainstItsFolder) {
  const std::string path = dir_.WriteFile("web.yml",
                                          "tls_server_config:\n  cert_file: server.crt\n"
                                          "  key_file: server.key\nbasic_auth_users:\n  u: " +
                                              hash_ + "\n");
  Result<WebConfig> config = LoadWebConfig(path);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->tls->cert_pem, cert_.cert_pem);
  EXPECT_EQ(config->basic_auth_users.size(), 1u);
}

// ---- files that are refused: the top level ----

TEST_F(WebConfigTest, UnknownTopLevelKey) {
  EXPECT_EQ(Refusal("basic_auth_users:\ntls_config:\n  cert_file: x\n"),
            "malformed: line 2: tls_config: unknown key; expected tls_server_config, "
            "http_server_config or basic_auth_users");
}

TEST_F(WebConfigTest, SectionThatIsNotAMapping) {
  EXPECT_EQ(Refusal("tls_server_config: server.crt\n"),
            "malformed: line 1: tls_server_config: expected a mapping, found a value");
  EXPECT_EQ(Refusal("basic_auth_users: alice\n"),
            "malformed: line 1: basic_auth_users: expected a mapping, found a value");
}

TEST_F(WebConfigTest, YamlOutsideTheSubsetKeepsItsLine) {
  EXPECT_EQ(Refusal("basic_auth_users:\n  alice: &h x\n"),
            "unsupported: line 2: anchors and aliases ('&x', '*x') are not supported");
}

// ---- tls_server_config ----

TEST_F(WebConfigTest, UnknownTlsKey) {
  EXPECT_EQ(Refusal("tls_server_config:\n  cert_path: server.crt\n"),
            "malformed: line 2: tls_server_config.cert_path: unknown key; expected cert_file, "
            "key_file, min_version, max_version, client_auth_type or "
            "prefer_server_cipher_suites");
}

TEST_F(WebConfigTest, ClientCertificatesAreUnsupported) {
  EXPECT_EQ(Refusal("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n"),
            "unsupported: line 2: tls_server_config.client_auth_type: "
            "\"RequireAndVerifyClientCert\" is not supported (vmetrics does not check client "
            "certificates); remove it or set NoClientCert");
  EXPECT_EQ(Refusal("tls_server_config:\n  client_ca_file: ca.pem\n"),
            "unsupported: line 2: tls_server_config.client_ca_file: client certificates are "
            "not supported; remove it");
  EXPECT_EQ(Refusal("tls_server_config:\n  client_auth_type: Sometimes\n"),
            "invalid argument: line 2: tls_server_config.client_auth_type: unknown value "
            "\"Sometimes\"");
}

TEST_F(WebConfigTest, CipherSuitesCurvesAndInlineCertsAreUnsupported) {
  EXPECT_EQ(Refusal("tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n"),
            "unsupported: line 2: tls_server_config.cipher_suites: not supported; GnuTLS's "
            "NORMAL choices apply");
  EXPECT_EQ(Refusal("tls_server_config:\n  curve_preferences:\n    - X25519\n"),
            "unsupported: line 3: 'curve_preferences' holds a sequence ('- item'); sequences "
            "are not supported");
  EXPECT_EQ(Refusal("tls_server_config:\n  cert: x\n"),
            "unsupported: line 2: tls_server_config.cert: inline certificates and keys are not "
            "supported; use cert_file and key_file");
}

TEST_F(WebConfigTest, TlsVersions) {
  EXPECT_EQ(Refusal("tls_server_config:\n  min_version: TLS10\n"),
            "unsupported: line 2: tls_server_config.min_version: TLS10 is not offered; "
            "vmetrics speaks TLS 1.2 and 1.3");
  EXPECT_EQ(Refusal("tls_server_config:\n  max_version: TLS1.3\n"),
            "invalid argument: line 2: tls_server_config.max_version: unknown TLS version "
            "'TLS1.3'; expected TLS12 or TLS13");
  const std::string refusal = Refusal(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "  min_version: TLS13\n  max_version: TLS12\n");
  EXPECT_EQ(refusal,
            "invalid argument: line 1: tls_server_config: min_version is above max_version");
}

TEST_F(WebConfigTest, OneFileWithoutTheOther) {
  EXPECT_EQ(Refusal("tls_server_config:\n  cert_file: server.crt\n"),
            "invalid argument: line 1: tls_server_config.key_file: missing (cert_file is set)");
  EXPECT_EQ(Refusal("tls_server_config:\n  key_file: server.key\n"),
            "invalid argument: line 1: tls_server_config.cert_file: missing (key_file is set)");
}

TEST_F(WebConfigTest, MissingCertificateFileNamesThePath) {
  EXPECT_EQ(Refusal("tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n"),
            "invalid argument: line 2: tls_server_config.cert_file: cannot read '" + dir_.path() +
                "/nope.crt': No such file or directory");
}

TEST_F(WebConfigTest, CertificateThatIsNotPem) {
  dir_.WriteFile("junk.crt", "not a certificate\n");
  const std::string refusal =
      Refusal("tls_server_config:\n  cert_file: junk.crt\n  key_file: server.key\n");
  EXPECT_EQ(refusal.rfind("invalid argument: line 1: tls_server_config: cert_file: '" +
                              dir_.path() + "/junk.crt' holds no usable PEM certificate: ",
                          0),
            0u)
      << refusal;
}

TEST_F(WebConfigTest, KeyAndCertificateSwapped) {
  const std::string refusal =
      Refusal("tls_server_config:\n  cert_file: server.key\n  key_file: server.crt\n");
  EXPECT_NE(refusal.find("cert_file: '" + dir_.path() +
                         "/server.key' holds no usable PEM "
                         "certificate"),
            std::string::npos)
      << refusal;
}

TEST_F(WebConfigTest, KeyOfAnotherCertificate) {
  dir_.WriteFile("other.key", MakeSelfSignedCertificate().key_pem);
  EXPECT_EQ(Refusal("tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n"),
            "invalid argument: line 1: tls_server_config: key_file: '" + dir_.path() +
                "/other.key' is not the private key of the certificate in '" + dir_.path() +
                "/server.crt'");
}

TEST_F(WebConfigTest, EncryptedKeyIsRefusedWithAHint) {
  dir_.WriteFile("enc.key",
                 "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0w\n"
                 "-----END ENCRYPTED PRIVATE KEY-----\n");
  const std::string refusal =
      Refusal("tls_server_config:\n  cert_file: server.crt\n  key_file: enc.key\n");
  EXPECT_NE(refusal.find("(encrypted keys are not supported)"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("key_file: '" + dir_.path() + "/enc.key'"), std::string::npos) << refusal;
}

// ---- basic_auth_users ----

TEST_F(WebConfigTest, PlaintextPasswordIsNotAHash) {
  EXPECT_EQ(Refusal("basic_auth_users:\n  alice: secret\n"),
            "invalid argument: line 2: basic_auth_users.alice: not a bcrypt hash (6 "
            "characters; expected 60: $2a$, $2b$ or $2y$, a two-digit cost from 04 to 31, '$', "
            "then 53 characters; make one with `htpasswd -nBC 10 USER`)");
}

TEST_F(WebConfigTest, OtherCryptSchemesAndCostsAreNotBcrypt) {
  const std::string sha512 =
      "$6$saltsalt$qFmFH.bQmmtXzyBY0s9v7Oicd2z4XSIecDzlB5KiA2/jctKu9YterLp8wwnSq.qc.eoxqOmSuNp2"
      "xS0ktL3nh/";
  const std::string cost3 = "$2b$03$" + hash_.substr(7);
  const std::string cost32 = "$2b$32$" + hash_.substr(7);
  const std::string bad_char = hash_.substr(0, 59) + "!";
  const std::string two_x = "$2x$" + hash_.substr(4);
  for (const std::string& hash : {sha512, cost3, cost32, bad_char, two_x}) {
    const std::string refusal = Refusal("basic_auth_users:\n  alice: '" + hash + "'\n");
    EXPECT_NE(refusal.find("basic_auth_users.alice: not a bcrypt hash"), std::string::npos)
        << hash << " -> " << refusal;
    // The message never repeats the hash.
    EXPECT_EQ(refusal.find(hash), std::string::npos) << refusal;
  }
}

TEST_F(WebConfigTest, UserWithoutHash) {
  EXPECT_EQ(Refusal("basic_auth_users:\n  alice:\n"),
            "invalid argument: line 2: basic_auth_users.alice: no password hash");
  EXPECT_EQ(Refusal("basic_auth_users:\n  alice:\n    nested: x\n"),
            "malformed: line 2: basic_auth_users.alice: expected a string, found a mapping");
}

TEST_F(WebConfigTest, UserNameWithAColon) {
  EXPECT_EQ(Refusal("basic_auth_users:\n  'a:b': " + hash_ + "\n"),
            "invalid argument: line 2: basic_auth_users.a:b: user names cannot contain ':' "
            "(Basic credentials are split at the first one)");
}

TEST_F(WebConfigTest, EmptyOrControlCharacterUserName) {
  EXPECT_EQ(Refusal("basic_auth_users:\n  '': " + hash_ + "\n"),
            "invalid argument: line 2: basic_auth_users.: the user name is empty");
  EXPECT_EQ(Refusal("basic_auth_users:\n  \"a\\tb\": " + hash_ + "\n"),
            "invalid argument: line 2: basic_auth_users.a\tb: the user name contains a control "
            "character");
}

// ---- http_server_config ----

TEST_F(WebConfigTest, HeaderThatCannotBeConfigured) {
  EXPECT_EQ(Refusal("http_server_config:\n  headers:\n    Server: vmetrics\n"),
            "invalid argument: line 3: http_server_config.headers.Server: this header cannot "
            "be configured; the ones that can are Content-Security-Policy, "
            "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, "
            "X-XSS-Protection");
  // Names are matched exactly, as exporter-toolkit's map does.
  EXPECT_NE(Refusal("http_server_config:\n  headers:\n    x-frame-options: deny\n")
                .find("cannot be configured"),
            std::string::npos);
}

TEST_F(WebConfigTest, HeaderValuesOutsideTheirEnumeration) {
  EXPECT_EQ(Refusal("http_server_config:\n  headers:\n    X-Frame-Options: allow\n"),
            "invalid argument: line 3: http_server_config.headers.X-Frame-Options: 'allow' is "
            "not allowed; expected 'deny' or 'sameorigin'");
  EXPECT_EQ(Refusal("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n"),
            "invalid argument: line 3: http_server_config.headers.X-Content-Type-Options: "
            "'sniff' is not allowed; expected 'nosniff'");
}

TEST_F(WebConfigTest, HeaderValueCannotInjectAnotherHeader) {
  EXPECT_EQ(Refusal("http_server_config:\n  headers:\n"
                    "    Content-Security-Policy: \"x\\r\\nSet-Cookie: a=b\"\n"),
            "invalid argument: line 3: http_server_config.headers.Content-Security-Policy: the "
            "value contains a control character");
}

TEST_F(WebConfigTest, UnknownHttpKeyAndNonBoolHttp2) {
  EXPECT_EQ(Refusal("http_server_config:\n  rate_limit: 10\n"),
            "malformed: line 2: http_server_config.rate_limit: unknown key; expected headers "
            "or http2");
  EXPECT_EQ(Refusal("http_server_config:\n  http2: 'true'\n"),
            "malformed: line 2: http_server_config.http2: expected true or false");
}

// ---- LoadWebConfig on the file itself ----

TEST(LoadWebConfig, MissingFileNamesThePath) {
  Result<WebConfig> config = LoadWebConfig("/nonexistent/web.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().ToString(),
            "invalid argument: web config /nonexistent/web.yml: cannot read "
            "'/nonexistent/web.yml': No such file or directory");
}

TEST(LoadWebConfig, FolderIsNotAFile) {
  ScratchDirectory dir;
  Result<WebConfig> config = LoadWebConfig(dir.path());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "web config " + dir.path() + ": '" + dir.path() + "' is not a regular file");
}

TEST(LoadWebConfig, HugeFileIsRefusedUnread) {
  ScratchDirectory dir;
  const std::string path = dir.WriteFile("web.yml", std::string((1 << 20) + 1, '#'));
  Result<WebConfig> config = LoadWebConfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "web config " + path + ": '" + path + "' is larger than 1048576 bytes");
}

TEST(LoadWebConfig, ErrorsCarryThePathAndTheLine) {
  ScratchDirectory dir;
  const std::string path = dir.WriteFile("web.yml", "basic_auth_users:\n  alice: secret\n");
  Result<WebConfig> config = LoadWebConfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message().rfind("web config " + path +
                                                ": line 2: basic_auth_users.alice: not a "
                                                "bcrypt hash",
                                            0),
            0u)
      << config.status().message();
}

// ---- ValidateWebConfig on configs made by hand ----

TEST(ValidateWebConfig, ChecksWhatTheLoaderChecks) {
  WebConfig empty;
  EXPECT_TRUE(ValidateWebConfig(empty).ok());

  WebConfig plaintext;
  plaintext.basic_auth_users["alice"] = "plaintext";
  Status s = ValidateWebConfig(plaintext);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("basic_auth_users.alice: not a bcrypt hash", 0), 0u) << s.message();

  WebConfig header;
  header.headers.emplace_back("X-Frame-Options", "deny\r\nX: y");
  EXPECT_EQ(ValidateWebConfig(header).message(),
            "http_server_config.headers.X-Frame-Options: the value contains a control "
            "character");

  WebConfig tls;
  tls.tls.emplace();
  EXPECT_EQ(ValidateWebConfig(tls).message(), "tls_server_config: cert_file: the file is empty");

  const TestCertificate a = MakeSelfSignedCertificate();
  const TestCertificate b = MakeSelfSignedCertificate();
  WebConfig mismatched;
  mismatched.tls = TlsServerConfig{"a.crt", "b.key", a.cert_pem, b.key_pem};
  EXPECT_EQ(ValidateWebConfig(mismatched).message(),
            "tls_server_config: key_file: 'b.key' is not the private key of the certificate "
            "in 'a.crt'");
  WebConfig matched;
  matched.tls = TlsServerConfig{"a.crt", "a.key", a.cert_pem, a.key_pem};
  EXPECT_TRUE(ValidateWebConfig(matched).ok());
}

}  // namespace
}  // namespace vmetrics
