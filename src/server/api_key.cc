// SPDX-License-Identifier: Apache-2.0
// vLLM's Bearer API keys; see api_key.h.
#include "api_key.h"

#include <gnutls/crypto.h>
#include <strings.h>

#include <utility>

namespace vmetrics::internal {
namespace {

std::array<unsigned char, 32> Sha256(std::string_view text) {
  std::array<unsigned char, 32> digest{};
  // gnutls_hash_fast fails only for an unknown algorithm; SHA-256 is always there. Were it to
  // fail, the digest stays zero for every input, and no key matches a zero digest of its own.
  (void)gnutls_hash_fast(GNUTLS_DIG_SHA256, text.data(), text.size(), digest.data());
  return digest;
}

}  // namespace

ApiKeyCheck::ApiKeyCheck(const std::vector<std::string>& keys,
                         std::vector<std::string> path_prefixes)
    : prefixes_(std::move(path_prefixes)) {
  for (const std::string& key : keys) digests_.push_back(Sha256(key));
}

bool ApiKeyCheck::Guards(std::string_view method, std::string_view path) const {
  if (method == "OPTIONS") return false;
  if (prefixes_.empty()) return true;
  for (const std::string& prefix : prefixes_) {
    if (path.starts_with(prefix)) return true;
  }
  return false;
}

bool ApiKeyCheck::Accepts(std::string_view authorization) const {
  // Python's str.partition(" "): the scheme before the first space, the key after it.
  const size_t space = authorization.find(' ');
  const std::string_view scheme = authorization.substr(0, space);
  const std::string_view key =
      space == std::string_view::npos ? std::string_view() : authorization.substr(space + 1);
  const bool bearer = scheme.size() == 6 && strncasecmp(scheme.data(), "bearer", 6) == 0;
  const std::array<unsigned char, 32> digest = Sha256(key);
  unsigned char match = 0;
  for (const std::array<unsigned char, 32>& expected : digests_) {
    unsigned char difference = 0;
    for (size_t i = 0; i < digest.size(); ++i) difference |= digest[i] ^ expected[i];
    match |= static_cast<unsigned char>(difference == 0);
  }
  return bearer && match != 0;
}

}  // namespace vmetrics::internal
