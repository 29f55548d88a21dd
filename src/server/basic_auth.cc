// SPDX-License-Identifier: Apache-2.0
// Basic credentials and their bcrypt check; see basic_auth.h for the cache and its trade-off.
#include "basic_auth.h"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <strings.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace vmetrics::internal {
namespace {

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding, as Go's base64.StdEncoding (and so exporter-toolkit) reads
// it: whole quads, '=' only at the end. nullopt on anything else.
std::optional<std::string> DecodeBase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int v[4];
    int padding = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + static_cast<size_t>(j)];
      // Padding only in the last quad's last two places, and nothing but padding after it.
      if (c == '=' && last && j >= 2) {
        ++padding;
        v[j] = 0;
        continue;
      }
      if (padding > 0) return std::nullopt;
      v[j] = Base64Value(c);
      if (v[j] < 0) return std::nullopt;
    }
    const unsigned bits = (static_cast<unsigned>(v[0]) << 18) |
                          (static_cast<unsigned>(v[1]) << 12) | (static_cast<unsigned>(v[2]) << 6) |
                          static_cast<unsigned>(v[3]);
    out.push_back(static_cast<char>((bits >> 16) & 0xFF));
    if (padding < 2) out.push_back(static_cast<char>((bits >> 8) & 0xFF));
    if (padding < 1) out.push_back(static_cast<char>(bits & 0xFF));
  }
  return out;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Compares every byte whatever the first difference, so the time taken says nothing about how
// much of a hash matched. Lengths are not secret (every bcrypt hash has 60 characters).
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

bool ConstantTimeEquals(const unsigned char* a, const unsigned char* b, size_t size) {
  unsigned char difference = 0;
  for (size_t i = 0; i < size; ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

bool FillRandom(unsigned char* out, size_t size) {
  while (size > 0) {
    const ssize_t got = getrandom(out, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

std::optional<BasicCredentials> ParseBasicAuthorization(std::string_view value) {
  constexpr std::string_view kScheme = "Basic";
  while (!value.empty() && IsBlank(value.front())) value.remove_prefix(1);
  while (!value.empty() && IsBlank(value.back())) value.remove_suffix(1);
  if (value.size() <= kScheme.size() || !IsBlank(value[kScheme.size()]) ||
      strncasecmp(value.data(), kScheme.data(), kScheme.size()) != 0) {
    return std::nullopt;
  }
  value.remove_prefix(kScheme.size());
  while (!value.empty() && IsBlank(value.front())) value.remove_prefix(1);
  std::optional<std::string> decoded = DecodeBase64(value);
  if (!decoded.has_value()) return std::nullopt;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  BasicCredentials credentials;
  credentials.user = decoded->substr(0, colon);
  credentials.password = decoded->substr(colon + 1);
  explicit_bzero(decoded->data(), decoded->size());
  return credentials;
}

BasicAuthVerifier::BasicAuthVerifier(std::map<std::string, std::string> users)
    : users_(std::move(users)),
      decoy_hash_(users_.empty() ? std::string() : users_.begin()->second) {
  // Without a key the cache would be a table of unkeyed password digests; go without it.
  cache_enabled_ = FillRandom(hmac_key_.data(), hmac_key_.size());
}

BasicAuthVerifier::~BasicAuthVerifier() { explicit_bzero(hmac_key_.data(), hmac_key_.size()); }

template <size_t kEntries>
bool BasicAuthVerifier::DigestRing<kEntries>::Contains(const Digest& digest) const {
  std::lock_guard<std::mutex> lock(mu_);
  bool found = false;
  for (size_t i = 0; i < size_; ++i) {
    found |= ConstantTimeEquals(entries_[i].data(), digest.data(), digest.size());
  }
  return found;
}

template <size_t kEntries>
void BasicAuthVerifier::DigestRing<kEntries>::Add(const Digest& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  if (size_ < entries_.size()) {
    entries_[size_++] = digest;
    return;
  }
  entries_[next_] = digest;
  next_ = (next_ + 1) % entries_.size();
}

BasicAuthVerifier::Digest BasicAuthVerifier::CacheKey(const BasicCredentials& credentials) const {
  // The user's length goes first so ("ab", "c") and ("a", "bc") cannot share a key.
  std::string message;
  const uint64_t user_size = credentials.user.size();
  message.append(reinterpret_cast<const char*>(&user_size), sizeof user_size);
  message += credentials.user;
  message += credentials.password;
  Digest digest{};
  if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, hmac_key_.data(), hmac_key_.size(), message.data(),
                       message.size(), digest.data()) < 0) {
    digest.fill(0);
  }
  explicit_bzero(message.data(), message.size());
  return digest;
}

bool BasicAuthVerifier::IsCached(const BasicCredentials& credentials) const {
  return Lookup(credentials) == Known::kAllowed;
}

BasicAuthVerifier::Known BasicAuthVerifier::Lookup(const BasicCredentials& credentials) const {
  if (users_.empty() || !cache_enabled_) return Known::kUnknown;
  const Digest digest = CacheKey(credentials);
  // An all-zero digest means the HMAC failed; never trust it.
  if (digest == Digest{}) return Known::kUnknown;
  if (successes_.Contains(digest)) return Known::kAllowed;
  if (failures_.Contains(digest)) return Known::kDenied;
  return Known::kUnknown;
}

bool BasicAuthVerifier::Verify(const BasicCredentials& credentials) const {
  if (users_.empty()) return false;
  const Digest digest = CacheKey(credentials);
  // An all-zero digest means the HMAC failed; never trust it.
  const bool keyed = cache_enabled_ && digest != Digest{};
  if (keyed && successes_.Contains(digest)) return true;

  const auto user = users_.find(credentials.user);
  const std::string& hash = user != users_.end() ? user->second : decoy_hash_;
  // crypt_data is about 32 KiB of scratch; on the heap rather than a worker thread's stack.
  // Value-initialised: libcrypt wants its `initialized` field zero before the first call.
  auto scratch = std::make_unique<crypt_data>();
  bcrypt_runs_.fetch_add(1, std::memory_order_relaxed);
  const char* computed =
      crypt_rn(credentials.password.c_str(), hash.c_str(), scratch.get(), sizeof *scratch);
  bool match = computed != nullptr && ConstantTimeEquals(computed, hash);
  explicit_bzero(scratch.get(), sizeof *scratch);
  match = match && user != users_.end() && credentials.password.find('\0') == std::string::npos;
  if (keyed) {
    if (match) {
      successes_.Add(digest);
    } else {
      failures_.Add(digest);
    }
  }
  return match;
}

}  // namespace vmetrics::internal
