// SPDX-License-Identifier: Apache-2.0
// File: http_request_fuzz_check.h
//
// The invariants the HTTP request fuzzer checks, shared by the libFuzzer entry
// (http_request_fuzz.cc) and the corpus-replay test
// (tests/server/http_request_corpus_replay_test.cc), so a crash input kept in
// fuzz/corpus/http_request/ fails ctest without libFuzzer.
//
// Input: the bytes of a request head as a client sends it. The first line (up to "\n", a
// trailing "\r" dropped) is split at spaces into method, target and version; the target is
// split at '?' into path and query, as libmicrohttpd does before the access handler runs.
// Each later line up to an empty one is a header: the name up to the first ':', the value
// after it with blanks trimmed (a line without ':' is a name with an empty value). Unlike
// libmicrohttpd, NUL and other bytes are passed through, so the code sees worse than it will.
//
// What runs, all of it the socket-free request handling of src/server: AddHeader for each
// line (header counting, Accept/Accept-Encoding joining, Authorization), RouteFor, Negotiate
// on the joined Accept and Accept-Encoding, ParseBasicAuthorization on the Authorization
// value, and BuildReply twice: without credentials configured, and with one user
// ("fuzz", password "fuzz", bcrypt cost 4) whose successful check is cached.
//
// Invariants:
//   * nothing crashes (ASan/UBSan report anything else);
//   * Negotiate's content type is one of the two exposition types, and BuildReply's /metrics
//     reply carries that type, gzip-compressed exactly when Negotiate said so, the body
//     inflating back to what the handler rendered;
//   * ParseBasicAuthorization's credentials survive re-encoding: "Basic " + base64 of
//     user:password parses back to the same pair;
//   * the status is one the server documents, a 405 carries Allow, a 401 carries the challenge;
//   * 200 only for GET or HEAD of a known path, HTTP/1.0 or 1.1, at most max_headers lines,
//     every header name a token, a target without control bytes (raw or percent-encoded), at
//     most one Content-Length, of digits only and not beside Transfer-Encoding;
//   * every 400 closes the connection (Connection: close);
//   * with a user configured, nothing but 400, 431 or 401 without that user's exact
//     credentials in exactly one Authorization header: never 200, 404 or 405.
#ifndef VMETRICS_FUZZ_HTTP_REQUEST_FUZZ_CHECK_H_
#define VMETRICS_FUZZ_HTTP_REQUEST_FUZZ_CHECK_H_

#include <crypt.h>
#include <zlib.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "basic_auth.h"
#include "request_handler.h"
#include "vmetrics/exposition.h"

namespace vmetrics::fuzz {

inline constexpr unsigned kFuzzMaxHeaders = 100;
inline constexpr std::string_view kFuzzUser = "fuzz";
inline constexpr std::string_view kFuzzPassword = "fuzz";

inline std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline std::string EncodeBase64(std::string_view bytes) {
  constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = bytes.size() - i < 3 ? bytes.size() - i : 3;
    unsigned bits = 0;
    for (size_t j = 0; j < 3; ++j) {
      bits = (bits << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    }
    for (size_t j = 0; j < 4; ++j)
      out.push_back(j <= n ? kAlphabet[(bits >> (18 - 6 * j)) & 63] : '=');
  }
  return out;
}

inline bool InflateGzip(std::string_view compressed, std::string* out) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return false;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  out->clear();
  char chunk[4096];
  int rc = Z_OK;
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    rc = inflate(&stream, Z_NO_FLUSH);
    out->append(chunk, sizeof chunk - stream.avail_out);
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) break;
  }
  inflateEnd(&stream);
  return rc == Z_STREAM_END && stream.avail_in == 0;
}

// The request head of the fuzz input, its views pointing into `input`.
inline internal::RequestHead ParseFuzzRequest(std::string_view input) {
  internal::RequestHead head;
  size_t end = input.find('\n');
  std::string_view line = input.substr(0, end);
  input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t first = line.find(' ');
  head.method = line.substr(0, first);
  if (first != std::string_view::npos) {
    const std::string_view rest = line.substr(first + 1);
    const size_t second = rest.find(' ');
    const std::string_view target = rest.substr(0, second);
    head.path = target.substr(0, target.find('?'));
    head.bad_target = internal::TargetHasControlBytes(target);
    if (second != std::string_view::npos) head.version = rest.substr(second + 1);
  }
  while (!input.empty()) {
    end = input.find('\n');
    line = input.substr(0, end);
    input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      internal::AddHeader(line, "", &head);
    } else {
      internal::AddHeader(line.substr(0, colon), TrimBlanks(line.substr(colon + 1)), &head);
    }
  }
  return head;
}

// The bcrypt hash of kFuzzPassword at cost 4, made once.
inline const std::string& FuzzUserHash() {
  static const std::string hash = [] {
    char setting[CRYPT_GENSALT_OUTPUT_SIZE];
    auto scratch = std::make_unique<crypt_data>();
    if (crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof setting) == nullptr)
      return std::string();
    const char* h =
        crypt_rn(std::string(kFuzzPassword).c_str(), setting, scratch.get(), sizeof *scratch);
    return std::string(h != nullptr ? h : "");
  }();
  return hash;
}

// The verifier of the "with a user" run; its cache already holds the right credentials, so
// only inputs with other parseable credentials pay a bcrypt.
inline const internal::BasicAuthVerifier& FuzzVerifier() {
  static const auto* verifier = [] {
    std::map<std::string, std::string> users{{std::string(kFuzzUser), FuzzUserHash()}};
    auto* v = new internal::BasicAuthVerifier(std::move(users));
    v->Verify({std::string(kFuzzUser), std::string(kFuzzPassword)});
    return v;
  }();
  return *verifier;
}

inline HttpHandlers FuzzHandlers() {
  HttpHandlers handlers;
  handlers.render_metrics = [](ExpositionFormat format) {
    return std::string(format == ExpositionFormat::kOpenMetrics ? "up 1.0\n# EOF\n" : "up 1.0\n");
  };
  handlers.health = [] { return HealthReport{true, "ok"}; };
  return handlers;
}

// Checks one reply; "" when every invariant holds.
inline std::string CheckReply(const internal::RequestHead& head, const internal::Reply& reply,
                              bool auth_configured, bool right_credentials) {
  const unsigned s = reply.status;
  if (s != 200 && s != 400 && s != 401 && s != 404 && s != 405 && s != 431) {
    return "unexpected status " + std::to_string(s);
  }
  if (s == 405 && reply.allow != "GET, HEAD") return "405 without Allow";
  if (s == 401 && reply.www_authenticate != internal::kBasicAuthChallenge)
    return "401 without challenge";
  if (s == 401 && !auth_configured) return "401 without users configured";
  if (auth_configured && !right_credentials && s != 400 && s != 431 && s != 401) {
    return "status " + std::to_string(s) + " without credentials";
  }
  if (s == 400 && !reply.close) return "400 without Connection: close";
  if (s != 200) return "";
  if (head.bad_target) return "200 for a target with control bytes";
  if (head.invalid_header_name) return "200 with a header name that is not a token";
  if (head.content_length_count > 1 || head.content_length_malformed ||
      (head.content_length_count > 0 && head.transfer_encoding)) {
    return "200 with Content-Length repeated, malformed or beside Transfer-Encoding";
  }
  if (head.method != "GET" && head.method != "HEAD")
    return "200 for method " + std::string(head.method);
  if (head.version != "HTTP/1.1" && head.version != "HTTP/1.0") return "200 for a bad version";
  if (head.header_count > kFuzzMaxHeaders) return "200 with too many headers";
  if (head.host_count > 1) return "200 with two Host lines";
  if (head.version == "HTTP/1.1" && head.host_count != 1) return "200 for HTTP/1.1 without Host";
  const internal::Endpoint endpoint = internal::RouteFor(head.path);
  if (endpoint == internal::Endpoint::kNotFound) return "200 for an unknown path";
  if (endpoint == internal::Endpoint::kHealth)
    return reply.body == "ok" ? "" : "wrong /health body";
  const Negotiated negotiated = Negotiate(head.accept, head.accept_encoding);
  if (reply.content_type != negotiated.content_type) return "content type differs from Negotiate";
  const std::string expected =
      negotiated.format == ExpositionFormat::kOpenMetrics ? "up 1.0\n# EOF\n" : "up 1.0\n";
  if (negotiated.gzip != (reply.content_encoding == "gzip")) return "gzip differs from Negotiate";
  if (!negotiated.gzip) return reply.body == expected ? "" : "body differs from the render";
  std::string inflated;
  if (!InflateGzip(reply.body, &inflated) || inflated != expected)
    return "gzip body does not inflate";
  return "";
}

// Runs everything on one input; "" when every invariant holds, else what broke.
inline std::string CheckHttpRequestInvariants(std::string_view input) {
  const internal::RequestHead head = ParseFuzzRequest(input);

  const Negotiated negotiated = Negotiate(head.accept, head.accept_encoding);
  if (negotiated.content_type != kContentTypeText004 &&
      negotiated.content_type != kContentTypeOpenMetrics100) {
    return "Negotiate returned an unknown content type";
  }

  bool right_credentials = false;
  if (std::optional<internal::BasicCredentials> credentials =
          internal::ParseBasicAuthorization(head.authorization)) {
    std::optional<internal::BasicCredentials> again = internal::ParseBasicAuthorization(
        "Basic " + EncodeBase64(credentials->user + ":" + credentials->password));
    if (!again.has_value() || again->user != credentials->user ||
        again->password != credentials->password) {
      return "credentials do not survive re-encoding";
    }
    right_credentials = head.authorization_count == 1 && credentials->user == kFuzzUser &&
                        credentials->password == kFuzzPassword;
  }

  // A route's body: 411 exactly for Transfer-Encoding, else 417 exactly for
  // `Expect: 100-continue` with a Content-Length past the route's limit, else read.
  constexpr size_t kFuzzBodyLimit = 1024;
  const std::optional<internal::BodyRefusal> refusal =
      internal::RejectRouteBody(head, kFuzzBodyLimit);
  unsigned want = 0;
  if (head.transfer_encoding) {
    want = 411;
  } else if (head.expect_continue && head.content_length_valid &&
             head.content_length > kFuzzBodyLimit) {
    want = 417;
  }
  if ((refusal.has_value() ? refusal->status : 0) != want) {
    return "route body refusal " + std::to_string(refusal.has_value() ? refusal->status : 0) +
           ", expected " + std::to_string(want);
  }

  const HttpHandlers handlers = FuzzHandlers();
  const internal::RequestRules open_rules{kFuzzMaxHeaders, nullptr};
  std::string why =
      CheckReply(head, internal::BuildReply(handlers, open_rules, head), false, false);
  if (!why.empty()) return "without users: " + why;
  const internal::RequestRules auth_rules{kFuzzMaxHeaders, &FuzzVerifier()};
  why = CheckReply(head, internal::BuildReply(handlers, auth_rules, head), true, right_credentials);
  if (!why.empty()) return "with a user: " + why;
  return "";
}

}  // namespace vmetrics::fuzz

#endif  // VMETRICS_FUZZ_HTTP_REQUEST_FUZZ_CHECK_H_
