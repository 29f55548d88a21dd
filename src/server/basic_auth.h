// SPDX-License-Identifier: Apache-2.0
// File: basic_auth.h (internal to src/server)
//
// HTTP Basic authentication against the bcrypt hashes of a web config's basic_auth_users:
// ParseBasicAuthorization reads an `Authorization` header value, BasicAuthVerifier checks the
// credentials with libcrypt (libxcrypt's bcrypt) and remembers the ones that passed.
//
// Why a cache: bcrypt is slow on purpose (cost 10 is about 0.1 s of CPU here), and Prometheus
// sends the same credentials with every scrape, every few seconds. A (user, password) pair
// that verified once is remembered as HMAC-SHA256(key, user, password) under a random key made
// when the verifier is, so later requests cost one HMAC and never a bcrypt (IsCached, and
// Verify itself).
//
// Failures are remembered too, the same way, but only for Lookup: Verify always pays a full
// bcrypt for a pair that is not a remembered success. The server asks Lookup before queueing a
// check (verification_queue.h), so a flood that repeats one wrong pair costs one bcrypt, and
// the queue stays free for the checks of everyone else; a guess that is new still pays bcrypt.
// Remembering a failure tells the guesser nothing it did not know.
//
// The trade-off: while the process runs, its memory holds a digest of each remembered
// password under a key that is also in its memory. Someone who can read the process's memory
// can test password guesses against those digests at HMAC speed rather than bcrypt speed, for
// users who logged in. Such a reader could as well take passwords from requests in flight, so
// the cache adds little; nothing is written to disk, and a restart forgets it. The cache holds
// kBasicAuthCacheEntries pairs; more distinct good pairs than that (many users, or a password
// change on the client) evict the oldest, which then pays bcrypt once more.
//
// Timing: an unknown user is checked against a configured user's hash, so it costs the same
// bcrypt as a known one and response time does not tell user names apart; hashes are compared
// in constant time.
//
// Thread safety: BasicAuthVerifier::Verify may be called from any number of threads at once.
#ifndef VMETRICS_SERVER_BASIC_AUTH_H_
#define VMETRICS_SERVER_BASIC_AUTH_H_

#include <string.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace vmetrics::internal {

// (user, password) pairs remembered after a successful bcrypt check.
inline constexpr size_t kBasicAuthCacheEntries = 64;

// (user, password) pairs remembered after a failed bcrypt check (for Lookup); the oldest goes
// first when full.
inline constexpr size_t kBasicAuthFailureEntries = 256;

// `WWW-Authenticate` of every 401.
inline constexpr std::string_view kBasicAuthChallenge = "Basic realm=\"vmetrics\"";

struct BasicCredentials {
  std::string user;
  std::string password;
};

// ParseBasicAuthorization
//
// The credentials in an Authorization header value: the scheme `Basic` (any case), blanks,
// then standard padded base64 of "user:password", optionally followed by blanks. The user is
// everything before the first ':' of the decoded text, the password everything after (which
// may hold further colons). nullopt for any other scheme, bad base64, or no ':'.
//
// Example:
//   auto c = ParseBasicAuthorization("Basic YWxpY2U6c2VjcmV0");  // alice:secret
//   ASSERT_TRUE(c.has_value());
//   EXPECT_EQ(c->user, "alice");
//   EXPECT_EQ(c->password, "secret");
std::optional<BasicCredentials> ParseBasicAuthorization(std::string_view value);

// BasicAuthVerifier
//
// Decides whether credentials match basic_auth_users.
class BasicAuthVerifier {
 public:
  // `users`: user name -> bcrypt hash, as ValidateWebConfig accepts them. REQUIRES: not empty.
  explicit BasicAuthVerifier(std::map<std::string, std::string> users);

  BasicAuthVerifier(const BasicAuthVerifier&) = delete;
  BasicAuthVerifier& operator=(const BasicAuthVerifier&) = delete;
  ~BasicAuthVerifier();

  // Verify
  //
  // True when `credentials.user` is configured and the password matches its hash. Passwords
  // with a NUL byte never match (C's crypt would see only the part before it). As with every
  // bcrypt, only the first 72 bytes of a password count.
  //
  // Example:
  //   BasicAuthVerifier verifier({{"alice", hash_of_secret}});
  //   EXPECT_TRUE(verifier.Verify({"alice", "secret"}));
  //   EXPECT_FALSE(verifier.Verify({"alice", "Secret"}));
  bool Verify(const BasicCredentials& credentials) const;

  // IsCached
  //
  // True when `credentials` passed Verify before and are still remembered: Verify would say
  // true without a bcrypt. Costs one HMAC. False says nothing (not checked, or evicted).
  //
  // Example:
  //   ASSERT_TRUE(verifier.Verify({"alice", "secret"}));
  //   EXPECT_TRUE(verifier.IsCached({"alice", "secret"}));
  bool IsCached(const BasicCredentials& credentials) const;

  // Lookup
  //
  // What the remembered checks say about `credentials`, at the cost of one HMAC: kAllowed
  // when they passed Verify before (as IsCached), kDenied when they failed it recently,
  // kUnknown otherwise (a bcrypt is needed).
  //
  // Example:
  //   EXPECT_FALSE(verifier.Verify({"alice", "guess"}));
  //   EXPECT_EQ(verifier.Lookup({"alice", "guess"}), BasicAuthVerifier::Known::kDenied);
  enum class Known : uint8_t { kUnknown, kAllowed, kDenied };
  Known Lookup(const BasicCredentials& credentials) const;

  // bcrypt computations so far, cache hits excluded; for tests and the fuzz target.
  uint64_t bcrypt_runs() const { return bcrypt_runs_.load(std::memory_order_relaxed); }

 private:
  using Digest = std::array<unsigned char, 32>;

  Digest CacheKey(const BasicCredentials& credentials) const;
  // A ring of remembered digests: the oldest is overwritten once full. Lookups compare every
  // entry in constant time. Thread-safe.
  template <size_t kEntries>
  class DigestRing {
   public:
    ~DigestRing() { explicit_bzero(entries_.data(), sizeof entries_); }
    bool Contains(const Digest& digest) const;
    void Add(const Digest& digest);

   private:
    mutable std::mutex mu_;
    std::array<Digest, kEntries> entries_{};
    size_t size_ = 0;  // guarded by mu_
    size_t next_ = 0;  // slot to overwrite next once full; guarded by mu_
  };

  const std::map<std::string, std::string> users_;
  // Checked for unknown users so they cost what known ones do.
  const std::string decoy_hash_;
  std::array<unsigned char, 32> hmac_key_{};
  bool cache_enabled_ = false;  // false when no random key could be had

  mutable DigestRing<kBasicAuthCacheEntries> successes_;
  mutable DigestRing<kBasicAuthFailureEntries> failures_;
  mutable std::atomic<uint64_t> bcrypt_runs_{0};
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_BASIC_AUTH_H_
