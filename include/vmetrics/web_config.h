// SPDX-License-Identifier: Apache-2.0
// File: web_config.h
//
// WebConfig: TLS and basic authentication for the HTTP endpoint, read from a file in the
// format of the Prometheus exporter-toolkit (`--web.config.file` of node_exporter and
// Prometheus itself), so an operator can hand vmetrics the file their other exporters use:
//
//   tls_server_config:
//     cert_file: server.crt      # PEM certificate (chain); relative to the config file's folder
//     key_file: server.key       # PEM private key, unencrypted (RSA, ECDSA or Ed25519)
//     min_version: TLS12         # optional: TLS12 (default) or TLS13
//     max_version: TLS13         # optional: TLS12 or TLS13 (default)
//   http_server_config:
//     headers:                   # optional extra response headers (exporter-toolkit's five)
//       X-Content-Type-Options: nosniff
//   basic_auth_users:            # user: bcrypt hash ($2a$, $2b$ or $2y$), e.g. from
//     prometheus: $2y$10$...     #   `htpasswd -nBC 10 prometheus`
//
// Every key is optional. Without `tls_server_config` (or with its cert_file and key_file both
// empty) the server speaks plain HTTP; without users it asks for no credentials; an empty file
// changes nothing.
//
// Differences from exporter-toolkit, all refused at load with kUnsupported rather than ignored:
// client certificates (`client_auth_type` other than NoClientCert, `client_ca_file`,
// `client_allowed_sans`), `cipher_suites`, `curve_preferences`, inline `cert`/`key`, TLS 1.0
// and 1.1, and YAML beyond nested mappings of scalars (see src/server/yaml_subset.h).
// `http_server_config.http2` is accepted and has no effect: vmetrics speaks HTTP/1.1 only
// (clients negotiate down, as they do with exporter-toolkit's `http2: false`).
// `prefer_server_cipher_suites` is accepted and has no effect: GnuTLS picks the suite.
// The file is read once; changes need a restart (exporter-toolkit re-reads on each request).
//
// Thread safety: plain values; copy freely.
#ifndef VMETRICS_WEB_CONFIG_H_
#define VMETRICS_WEB_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vmetrics/status.h"

namespace vmetrics {

enum class TlsVersion : uint8_t { kTls12, kTls13 };

// TlsServerConfig: `tls_server_config`, with the files already read.
struct TlsServerConfig {
  // The paths as resolved against the config file's folder, for messages.
  std::string cert_file;
  std::string key_file;

  // PEM text of the certificate (leaf first, then any intermediates) and of its private key.
  // The key is a secret: the struct is copied only into the server at Start.
  std::string cert_pem;
  std::string key_pem;

  // Protocol versions offered. REQUIRES: min_version <= max_version.
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
};

// WebConfig
//
// The parsed file. Also fit to fill by hand (a C++ frontend that has its own configuration);
// HttpServer::Start checks it with ValidateWebConfig either way.
struct WebConfig {
  // nullopt: plain HTTP.
  std::optional<TlsServerConfig> tls;

  // `basic_auth_users`: user name -> bcrypt hash. Empty: no credentials asked for. With at
  // least one user, every request to every path needs `Authorization: Basic` credentials that
  // match; otherwise the answer is 401 with `WWW-Authenticate: Basic realm="vmetrics"`.
  std::map<std::string, std::string> basic_auth_users;

  // `http_server_config.headers`: added to every response the handlers and refusals produce
  // (not to the few libmicrohttpd writes itself, such as 505), in file order.
  std::vector<std::pair<std::string, std::string>> headers;
};

// LoadWebConfig
//
// Reads the web config file at `path` (at most 1 MiB), and the certificate and key it names,
// and checks everything ValidateWebConfig checks, so a file that loads is one the server can
// start with. Relative cert_file and key_file are taken relative to the folder of `path`, as
// exporter-toolkit does.
//
// Failure: the message starts with "web config <path>: ", then "line N: " where a line is to
// blame, then the key in dotted form, for example
//   web config /etc/vmetrics/web.yml: line 3: tls_server_config.client_auth_type:
//   "RequireAndVerifyClientCert" is not supported (vmetrics does not check client
//   certificates); remove it or set NoClientCert
// Codes: kInvalidArgument (unreadable file, missing or wrong value, bad hash, key not matching
// the certificate), kMalformed (not the YAML subset, wrong type), kUnsupported (see above).
//
// Example:
//   Result<WebConfig> config = LoadWebConfig("/etc/vmetrics/web.yml");
//   if (!config.ok()) {
//     std::cerr << config.status().message() << "\n";
//     return;
//   }
//   options.web_config = std::move(*config);
Result<WebConfig> LoadWebConfig(const std::string& path);

// ParseWebConfig
//
// LoadWebConfig on text already read: `yaml` is the file's content and `directory` the folder
// relative cert_file and key_file are resolved against ("" for the working directory). Error
// messages carry no "web config <path>: " prefix.
//
// Example:
//   Result<WebConfig> config = ParseWebConfig("basic_auth_users:\n  alice: " + hash + "\n", "");
//   ASSERT_TRUE(config.ok());
//   EXPECT_EQ(config->basic_auth_users.at("alice"), hash);
Result<WebConfig> ParseWebConfig(std::string_view yaml, const std::string& directory);

// ValidateWebConfig
//
// Checks a WebConfig however it was made: user names non-empty, without ':' or control
// characters; every hash a bcrypt hash ("$2a$", "$2b$" or "$2y$", cost 04-31, 53 characters
// of salt and digest); header names among exporter-toolkit's five (Content-Security-Policy,
// Strict-Transport-Security, X-Content-Type-Options (nosniff), X-Frame-Options (deny or
// sameorigin), X-XSS-Protection) with values free of control characters; for TLS, a PEM
// certificate and an unencrypted PEM key that belong together, and min_version <= max_version.
// Failure: kInvalidArgument naming the key ("basic_auth_users.alice: ...").
//
// Example:
//   WebConfig config;
//   config.basic_auth_users["alice"] = "plaintext";
//   EXPECT_EQ(ValidateWebConfig(config).code(), StatusCode::kInvalidArgument);
Status ValidateWebConfig(const WebConfig& config);

}  // namespace vmetrics

#endif  // VMETRICS_WEB_CONFIG_H_
