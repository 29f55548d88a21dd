// SPDX-License-Identifier: Apache-2.0
// File: api_key.h (internal to src/server)
//
// ApiKeyCheck: vLLM's --api-key (AuthenticationMiddleware, vllm/entrypoints/serve/utils/
// server_utils.py at vllm-project/vllm 6adad087): a request to a guarded path must carry
// `Authorization: Bearer <key>` with one of the configured keys. As there: the scheme is
// matched case-insensitively, the key is everything after the first space, each candidate is
// compared as a SHA-256 digest against every key's digest in constant time (no early exit, so
// the time taken says nothing about which key or how much of it matched), and OPTIONS is not
// guarded. The keys themselves are not kept, only their digests.
//
// Thread safety: immutable after construction; Guards and Accepts may run on any thread.
#ifndef VMETRICS_SERVER_API_KEY_H_
#define VMETRICS_SERVER_API_KEY_H_

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace vmetrics::internal {

class ApiKeyCheck {
 public:
  // `keys` must be non-empty strings (HttpServer's CheckOptions says so); `path_prefixes` are
  // the guarded paths' prefixes, matched as vLLM matches them (str.startswith: "/v1" guards
  // "/v1x" too); empty guards every path.
  ApiKeyCheck(const std::vector<std::string>& keys, std::vector<std::string> path_prefixes);

  // Whether a request with this method and path needs a key.
  bool Guards(std::string_view method, std::string_view path) const;

  // Whether an Authorization header value carries one of the keys.
  //
  // Example:
  //   ApiKeyCheck check({"sk-1"}, {"/v1"});
  //   EXPECT_TRUE(check.Accepts("Bearer sk-1"));
  //   EXPECT_TRUE(check.Accepts("bearer sk-1"));
  //   EXPECT_FALSE(check.Accepts("Bearer  sk-1"));  // the key would be " sk-1"
  bool Accepts(std::string_view authorization) const;

 private:
  std::vector<std::array<unsigned char, 32>> digests_;
  std::vector<std::string> prefixes_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_API_KEY_H_
