// SPDX-License-Identifier: Apache-2.0
// Reading and checking exporter-toolkit web config files; see include/vmetrics/web_config.h.
#include "vmetrics/web_config.h"

#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "yaml_subset.h"

namespace vmetrics {
namespace {

using internal::YamlEntry;
using internal::YamlNode;

// Far above any real web config, certificate chain or key; a file this large is a mistake
// (a binary, a log) and is refused before it is read into memory.
constexpr size_t kMaxFileBytes = 1 << 20;

// The response headers exporter-toolkit lets a web config set, and the values it allows
// (empty: any). Kept identical so one file works for both; its list is private "to ensure
// consistency in the Prometheus ecosystem".
struct AllowedHeader {
  std::string_view name;
  std::array<std::string_view, 2> values;
};
constexpr AllowedHeader kAllowedHeaders[] = {
    {"Content-Security-Policy", {}},
    {"Strict-Transport-Security", {}},
    {"X-Content-Type-Options", {"nosniff"}},
    {"X-Frame-Options", {"deny", "sameorigin"}},
    {"X-XSS-Protection", {}},
};

// `client_auth_type` values exporter-toolkit knows that ask for client certificates.
constexpr std::string_view kClientCertAuthTypes[] = {"RequestClientCert", "RequireAnyClientCert",
                                                     "RequireClientCert", "VerifyClientCertIfGiven",
                                                     "RequireAndVerifyClientCert"};

bool HasControlCharacter(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) return true;
  }
  return false;
}

// Same code, message prefixed with the line and the key in dotted form.
Status At(int line, std::string_view key, const Status& status) {
  std::string message =
      "line " + std::to_string(line) + ": " + std::string(key) + ": " + status.message();
  switch (status.code()) {
    case StatusCode::kMalformed:
      return Status::Malformed(std::move(message));
    case StatusCode::kUnsupported:
      return Status::Unsupported(std::move(message));
    case StatusCode::kLimitExceeded:
      return Status::LimitExceeded(std::move(message));
    default:
      return Status::InvalidArgument(std::move(message));
  }
}

Status Prefixed(std::string_view prefix, const Status& status) {
  std::string message = std::string(prefix) + status.message();
  switch (status.code()) {
    case StatusCode::kMalformed:
      return Status::Malformed(std::move(message));
    case StatusCode::kUnsupported:
      return Status::Unsupported(std::move(message));
    case StatusCode::kLimitExceeded:
      return Status::LimitExceeded(std::move(message));
    default:
      return Status::InvalidArgument(std::move(message));
  }
}

const char* KindName(YamlNode::Kind kind) {
  switch (kind) {
    case YamlNode::Kind::kNull:
      return "nothing";
    case YamlNode::Kind::kScalar:
      return "a value";
    case YamlNode::Kind::kMapping:
      return "a mapping";
  }
  return "?";
}

// A string field: a scalar, or "" for null (as go-yaml leaves an unset string).
Result<std::string> StringField(const YamlEntry& entry, std::string_view key) {
  if (entry.value.kind == YamlNode::Kind::kMapping) {
    return At(entry.line, key, Status::Malformed("expected a string, found a mapping"));
  }
  return entry.value.scalar;
}

// A bool field, with the spellings go-yaml v2 (YAML 1.1) accepts.
Result<bool> BoolField(const YamlEntry& entry, std::string_view key) {
  static constexpr std::string_view kTrue[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                               "on",   "On",   "ON",   "y",   "Y"};
  static constexpr std::string_view kFalse[] = {"false", "False", "FALSE", "no", "No", "NO",
                                                "off",   "Off",   "OFF",   "n",  "N"};
  if (entry.value.kind == YamlNode::Kind::kScalar && !entry.value.quoted) {
    for (std::string_view t : kTrue) {
      if (entry.value.scalar == t) return true;
    }
    for (std::string_view f : kFalse) {
      if (entry.value.scalar == f) return false;
    }
  }
  return At(entry.line, key, Status::Malformed("expected true or false"));
}

// A section that must be a mapping; null counts as an empty one.
Status ExpectMapping(const YamlEntry& entry, std::string_view key) {
  if (entry.value.kind == YamlNode::Kind::kScalar) {
    return At(
        entry.line, key,
        Status::Malformed(std::string("expected a mapping, found ") + KindName(entry.value.kind)));
  }
  return Status::Ok();
}

Status UnknownKey(const YamlEntry& entry, std::string_view section, std::string_view expected) {
  const std::string key = section.empty() ? entry.key : std::string(section) + "." + entry.key;
  return At(entry.line, key, Status::Malformed("unknown key; expected " + std::string(expected)));
}

std::string ResolvePath(const std::string& directory, const std::string& file) {
  if (file.empty() || file.front() == '/' || directory.empty()) return file;
  if (directory.back() == '/') return directory + file;
  return directory + "/" + file;
}

Result<std::string> ReadFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::InvalidArgument("cannot read '" + path + "': " + std::strerror(errno));
  }
  std::string content;
  struct stat info {};
  Status status;
  if (fstat(fd, &info) != 0) {
    status = Status::InvalidArgument("cannot read '" + path + "': " + std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    status = Status::InvalidArgument("'" + path + "' is not a regular file");
  } else if (static_cast<uint64_t>(info.st_size) > kMaxFileBytes) {
    status = Status::InvalidArgument("'" + path + "' is larger than " +
                                     std::to_string(kMaxFileBytes) + " bytes");
  } else {
    char buffer[16384];
    for (;;) {
      const ssize_t got = read(fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        status = Status::InvalidArgument("cannot read '" + path + "': " + std::strerror(errno));
        break;
      }
      if (got == 0) break;
      content.append(buffer, static_cast<size_t>(got));
      // The file may have grown since fstat.
      if (content.size() > kMaxFileBytes) {
        status = Status::InvalidArgument("'" + path + "' is larger than " +
                                         std::to_string(kMaxFileBytes) + " bytes");
        break;
      }
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return content;
}

// ---- checks shared by the parser (which adds the line) and ValidateWebConfig ----

bool IsBcryptHash(std::string_view hash) {
  // $2b$10$ + 22 characters of salt + 31 of digest, in bcrypt's own base64 alphabet.
  if (hash.size() != 60 || hash.substr(0, 2) != "$2" || hash[3] != '$' || hash[6] != '$') {
    return false;
  }
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return false;
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9') return false;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (char c : hash.substr(7)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

Status CheckUser(std::string_view user, std::string_view hash) {
  if (user.empty()) return Status::InvalidArgument("the user name is empty");
  if (user.find(':') != std::string_view::npos) {
    return Status::InvalidArgument(
        "user names cannot contain ':' (Basic credentials are split at the first one)");
  }
  if (HasControlCharacter(user)) {
    return Status::InvalidArgument("the user name contains a control character");
  }
  if (hash.empty()) return Status::InvalidArgument("no password hash");
  // The hash itself is never echoed: it is a secret of sorts, and logs travel.
  if (!IsBcryptHash(hash)) {
    return Status::InvalidArgument(
        "not a bcrypt hash (" + std::to_string(hash.size()) +
        " characters; expected 60: $2a$, $2b$ or $2y$, a two-digit cost from 04 to 31, '$', "
        "then 53 characters; make one with `htpasswd -nBC 10 USER`)");
  }
  return Status::Ok();
}

Status CheckHeader(std::string_view name, std::string_view value) {
  for (const AllowedHeader& allowed : kAllowedHeaders) {
    if (allowed.name != name) continue;
    // CR or LF would let the file inject headers; nothing printable needs them.
    if (HasControlCharacter(value)) {
      return Status::InvalidArgument("the value contains a control character");
    }
    if (value.empty() || allowed.values[0].empty()) return Status::Ok();
    for (std::string_view v : allowed.values) {
      if (!v.empty() && v == value) return Status::Ok();
    }
    std::string expected;
    for (std::string_view v : allowed.values) {
      if (v.empty()) continue;
      if (!expected.empty()) expected += " or ";
      expected += "'" + std::string(v) + "'";
    }
    return Status::InvalidArgument("'" + std::string(value) + "' is not allowed; expected " +
                                   expected);
  }
  std::string names;
  for (const AllowedHeader& allowed : kAllowedHeaders) {
    if (!names.empty()) names += ", ";
    names += allowed.name;
  }
  return Status::InvalidArgument("this header cannot be configured; the ones that can are " +
                                 names);
}

gnutls_datum_t Datum(const std::string& s) {
  // GnuTLS takes non-const pointers but only reads PEM input.
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
          static_cast<unsigned int>(s.size())};
}

// The certificate parses, the key parses, and they are one pair. Each failure names the file
// to look at: GnuTLS's own pair check alone would only say "no certificate was found" or
// "key mismatch".
Status CheckTls(const TlsServerConfig& tls) {
  if (tls.min_version > tls.max_version) {
    return Status::InvalidArgument("min_version is above max_version");
  }
  if (tls.cert_pem.empty()) return Status::InvalidArgument("cert_file: the file is empty");
  if (tls.key_pem.empty()) return Status::InvalidArgument("key_file: the file is empty");
  const gnutls_datum_t cert = Datum(tls.cert_pem);
  const gnutls_datum_t key = Datum(tls.key_pem);

  gnutls_x509_crt_t* chain = nullptr;
  unsigned int chain_size = 0;
  int rc = gnutls_x509_crt_list_import2(&chain, &chain_size, &cert, GNUTLS_X509_FMT_PEM, 0);
  if (rc < 0) {
    return Status::InvalidArgument("cert_file: '" + tls.cert_file +
                                   "' holds no usable PEM certificate: " + gnutls_strerror(rc));
  }
  for (unsigned int i = 0; i < chain_size; ++i) gnutls_x509_crt_deinit(chain[i]);
  gnutls_free(chain);

  gnutls_x509_privkey_t private_key = nullptr;
  rc = gnutls_x509_privkey_init(&private_key);
  if (rc >= 0) {
    rc = gnutls_x509_privkey_import2(private_key, &key, GNUTLS_X509_FMT_PEM, nullptr,
                                     GNUTLS_PKCS_PLAIN);
    gnutls_x509_privkey_deinit(private_key);
  }
  if (rc < 0) {
    const bool encrypted = tls.key_pem.find("ENCRYPTED") != std::string::npos;
    return Status::InvalidArgument("key_file: '" + tls.key_file +
                                   "' holds no usable PEM private key: " + gnutls_strerror(rc) +
                                   (encrypted ? " (encrypted keys are not supported)" : ""));
  }

  gnutls_certificate_credentials_t credentials = nullptr;
  rc = gnutls_certificate_allocate_credentials(&credentials);
  if (rc >= 0) {
    rc = gnutls_certificate_set_x509_key_mem2(credentials, &cert, &key, GNUTLS_X509_FMT_PEM,
                                              nullptr, 0);
    gnutls_certificate_free_credentials(credentials);
  }
  if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH) {
    return Status::InvalidArgument("key_file: '" + tls.key_file +
                                   "' is not the private key of the certificate in '" +
                                   tls.cert_file + "'");
  }
  if (rc < 0) {
    return Status::InvalidArgument(std::string("cert_file and key_file cannot be used: ") +
                                   gnutls_strerror(rc));
  }
  return Status::Ok();
}

// ---- the schema ----

Result<TlsVersion> ParseTlsVersion(const YamlEntry& entry, std::string_view key) {
  Result<std::string> text = StringField(entry, key);
  if (!text.ok()) return text.status();
  if (*text == "TLS12") return TlsVersion::kTls12;
  if (*text == "TLS13") return TlsVersion::kTls13;
  if (*text == "TLS10" || *text == "TLS11") {
    return At(entry.line, key,
              Status::Unsupported(*text + " is not offered; vmetrics speaks TLS 1.2 and 1.3"));
  }
  return At(entry.line, key,
            Status::InvalidArgument("unknown TLS version '" + *text +
                                    "'; expected TLS12 or "
                                    "TLS13"));
}

Status ParseTlsSection(const YamlEntry& section, const std::string& directory, WebConfig* config) {
  if (Status s = ExpectMapping(section, "tls_server_config"); !s.ok()) return s;
  TlsServerConfig tls;
  int cert_line = section.line;
  int key_line = section.line;
  for (const YamlEntry& entry : section.value.entries) {
    const std::string key = "tls_server_config." + entry.key;
    if (entry.key == "cert_file" || entry.key == "key_file") {
      Result<std::string> path = StringField(entry, key);
      if (!path.ok()) return path.status();
      if (entry.key == "cert_file") {
        tls.cert_file = ResolvePath(directory, *path);
        cert_line = entry.line;
      } else {
        tls.key_file = ResolvePath(directory, *path);
        key_line = entry.line;
      }
    } else if (entry.key == "client_auth_type") {
      Result<std::string> type = StringField(entry, key);
      if (!type.ok()) return type.status();
      if (type->empty() || *type == "NoClientCert") continue;
      for (std::string_view known : kClientCertAuthTypes) {
        if (*type == known) {
          return At(entry.line, key,
                    Status::Unsupported("\"" + *type +
                                        "\" is not supported (vmetrics does not check client "
                                        "certificates); remove it or set NoClientCert"));
        }
      }
      return At(entry.line, key, Status::InvalidArgument("unknown value \"" + *type + "\""));
    } else if (entry.key == "client_ca_file" || entry.key == "client_allowed_sans") {
      // An empty value asks for nothing; anything else asks for client certificates.
      if (entry.value.kind == YamlNode::Kind::kNull ||
          (entry.value.kind == YamlNode::Kind::kScalar && entry.value.scalar.empty())) {
        continue;
      }
      return At(entry.line, key,
                Status::Unsupported("client certificates are not supported; remove it"));
    } else if (entry.key == "min_version" || entry.key == "max_version") {
      Result<TlsVersion> version = ParseTlsVersion(entry, key);
      if (!version.ok()) return version.status();
      (entry.key == "min_version" ? tls.min_version : tls.max_version) = *version;
    } else if (entry.key == "prefer_server_cipher_suites") {
      Result<bool> ignored = BoolField(entry, key);
      if (!ignored.ok()) return ignored.status();
    } else if (entry.key == "cipher_suites" || entry.key == "curve_preferences") {
      return At(entry.line, key,
                Status::Unsupported("not supported; GnuTLS's NORMAL choices apply"));
    } else if (entry.key == "cert" || entry.key == "key") {
      return At(entry.line, key,
                Status::Unsupported("inline certificates and keys are not supported; use "
                                    "cert_file and key_file"));
    } else {
      return UnknownKey(entry, "tls_server_config",
                        "cert_file, key_file, min_version, max_version, client_auth_type or "
                        "prefer_server_cipher_suites");
    }
  }
  // exporter-toolkit serves plain HTTP when neither file is named.
  if (tls.cert_file.empty() && tls.key_file.empty()) return Status::Ok();
  if (tls.cert_file.empty()) {
    return At(section.line, "tls_server_config.cert_file",
              Status::InvalidArgument("missing (key_file is set)"));
  }
  if (tls.key_file.empty()) {
    return At(section.line, "tls_server_config.key_file",
              Status::InvalidArgument("missing (cert_file is set)"));
  }
  Result<std::string> cert = ReadFile(tls.cert_file);
  if (!cert.ok()) return At(cert_line, "tls_server_config.cert_file", cert.status());
  Result<std::string> key = ReadFile(tls.key_file);
  if (!key.ok()) return At(key_line, "tls_server_config.key_file", key.status());
  tls.cert_pem = std::move(*cert);
  tls.key_pem = std::move(*key);
  if (Status s = CheckTls(tls); !s.ok()) return At(section.line, "tls_server_config", s);
  config->tls = std::move(tls);
  return Status::Ok();
}

Status ParseUsersSection(const YamlEntry& section, WebConfig* config) {
  if (Status s = ExpectMapping(section, "basic_auth_users"); !s.ok()) return s;
  for (const YamlEntry& entry : section.value.entries) {
    const std::string key = "basic_auth_users." + entry.key;
    Result<std::string> hash = StringField(entry, key);
    if (!hash.ok()) return hash.status();
    if (Status s = CheckUser(entry.key, *hash); !s.ok()) return At(entry.line, key, s);
    config->basic_auth_users[entry.key] = std::move(*hash);
  }
  return Status::Ok();
}

Status ParseHttpSection(const YamlEntry& section, WebConfig* config) {
  if (Status s = ExpectMapping(section, "http_server_config"); !s.ok()) return s;
  for (const YamlEntry& entry : section.value.entries) {
    const std::string key = "http_server_config." + entry.key;
    if (entry.key == "http2") {
      Result<bool> ignored = BoolField(entry, key);
      if (!ignored.ok()) return ignored.status();
    } else if (entry.key == "headers") {
      if (Status s = ExpectMapping(entry, key); !s.ok()) return s;
      for (const YamlEntry& header : entry.value.entries) {
        const std::string header_key = key + "." + header.key;
        Result<std::string> value = StringField(header, header_key);
        if (!value.ok()) return value.status();
        if (Status s = CheckHeader(header.key, *value); !s.ok()) {
          return At(header.line, header_key, s);
        }
        // "Unset if blank", as in exporter-toolkit.
        if (!value->empty()) config->headers.emplace_back(header.key, std::move(*value));
      }
    } else {
      return UnknownKey(entry, "http_server_config", "headers or http2");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<WebConfig> ParseWebConfig(std::string_view yaml, const std::string& directory) {
  Result<internal::YamlNode> root = internal::ParseYamlSubset(yaml);
  if (!root.ok()) return root.status();
  WebConfig config;
  for (const YamlEntry& entry : root->entries) {
    Status s;
    if (entry.key == "tls_server_config") {
      s = ParseTlsSection(entry, directory, &config);
    } else if (entry.key == "basic_auth_users") {
      s = ParseUsersSection(entry, &config);
    } else if (entry.key == "http_server_config") {
      s = ParseHttpSection(entry, &config);
    } else {
      s = UnknownKey(entry, "", "tls_server_config, http_server_config or basic_auth_users");
    }
    if (!s.ok()) return s;
  }
  return config;
}

Result<WebConfig> LoadWebConfig(const std::string& path) {
  const std::string prefix = "web config " + path + ": ";
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return Prefixed(prefix, text.status());
  const size_t slash = path.rfind('/');
  const std::string directory =
      slash == std::string::npos ? "" : (slash == 0 ? "/" : path.substr(0, slash));
  Result<WebConfig> config = ParseWebConfig(*text, directory);
  if (!config.ok()) return Prefixed(prefix, config.status());
  return config;
}

Status ValidateWebConfig(const WebConfig& config) {
  for (const auto& [user, hash] : config.basic_auth_users) {
    if (Status s = CheckUser(user, hash); !s.ok()) {
      return Status::InvalidArgument("basic_auth_users." + user + ": " + s.message());
    }
  }
  for (const auto& [name, value] : config.headers) {
    if (Status s = CheckHeader(name, value); !s.ok()) {
      return Status::InvalidArgument("http_server_config.headers." + name + ": " + s.message());
    }
  }
  if (config.tls.has_value()) {
    if (Status s = CheckTls(*config.tls); !s.ok()) {
      return Status::InvalidArgument("tls_server_config: " + s.message());
    }
  }
  return Status::Ok();
}

}  // namespace vmetrics
