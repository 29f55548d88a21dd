// SPDX-License-Identifier: Apache-2.0
// ParseBasicAuthorization and BasicAuthVerifier (src/server/basic_auth.cc), without sockets.
// Hashes are made at test time at bcrypt cost 4.
#include "basic_auth.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "security_test_util.h"

namespace vmetrics::internal {
namespace {

using security_test::Base64;
using security_test::BcryptHash;

TEST(ParseBasicAuthorization, ReadsUserAndPassword) {
  std::optional<BasicCredentials> c = ParseBasicAuthorization("Basic YWxpY2U6c2VjcmV0");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->password, "secret");
}

TEST(ParseBasicAuthorization, SchemeIsCaseInsensitiveAndBlanksAreTolerated) {
  for (std::string_view value :
       {"basic YWxpY2U6c2VjcmV0", "BASIC  YWxpY2U6c2VjcmV0", " Basic\tYWxpY2U6c2VjcmV0 "}) {
    std::optional<BasicCredentials> c = ParseBasicAuthorization(value);
    ASSERT_TRUE(c.has_value()) << value;
    EXPECT_EQ(c->user, "alice") << value;
  }
}

TEST(ParseBasicAuthorization, PasswordKeepsLaterColonsAndMayBeEmpty) {
  std::optional<BasicCredentials> c = ParseBasicAuthorization("Basic " + Base64("u:p:q:"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->user, "u");
  EXPECT_EQ(c->password, "p:q:");
  c = ParseBasicAuthorization("Basic " + Base64(":"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->user, "");
  EXPECT_EQ(c->password, "");
}

TEST(ParseBasicAuthorization, PaddingVariants) {
  // One, two and no '=' of padding.
  for (std::string_view pair : {"ab:c", "ab:cd", "ab:cde"}) {
    std::optional<BasicCredentials> c = ParseBasicAuthorization("Basic " + Base64(pair));
    ASSERT_TRUE(c.has_value()) << pair;
    EXPECT_EQ(c->user + ":" + c->password, pair);
  }
}

TEST(ParseBasicAuthorization, RefusesOtherSchemesAndBadBase64) {
  for (std::string_view value : {
           "", "Basic", "Basic ", "Basicx YWxpY2U6c2VjcmV0", "Bearer YWxpY2U6c2VjcmV0",
           "Digest username=\"alice\"",
           "Basic YWxpY2U6c2VjcmV0=",  // length not a multiple of 4
           "Basic YWxpY2U6c2VjcmV",    // truncated
           "Basic YWxp Y2U6c2VjcmV0",  // blank inside the token
           "Basic YW=pY2U6c2VjcmV0",   // padding in the middle
           "Basic YWxpY2U6c2VjcmV0====",
           "Basic YWxpY2U-c2VjcmV0",  // URL-safe alphabet
           "Basic YWxpY2U",           // "alice" without a colon (and bad length)
       }) {
    EXPECT_FALSE(ParseBasicAuthorization(value).has_value()) << ::testing::PrintToString(value);
  }
  EXPECT_FALSE(ParseBasicAuthorization("Basic " + Base64("no colon")).has_value());
}

class BasicAuthVerifierTest : public ::testing::Test {
 protected:
  const std::string alice_hash_ = BcryptHash("secret");
  const std::string bob_hash_ = BcryptHash("hunter2", "$2y$");
  BasicAuthVerifier verifier_{{{"alice", alice_hash_}, {"bob", bob_hash_}}};
};

TEST_F(BasicAuthVerifierTest, RightPasswordPassesWrongOnesDoNot) {
  EXPECT_TRUE(verifier_.Verify({"alice", "secret"}));
  EXPECT_TRUE(verifier_.Verify({"bob", "hunter2"}));
  EXPECT_FALSE(verifier_.Verify({"alice", "Secret"}));
  EXPECT_FALSE(verifier_.Verify({"alice", "hunter2"}));  // bob's password
  EXPECT_FALSE(verifier_.Verify({"alice", ""}));
  EXPECT_FALSE(verifier_.Verify({"Alice", "secret"}));  // user names are case-sensitive
}

TEST_F(BasicAuthVerifierTest, UnknownUserCostsABcryptToo) {
  const uint64_t before = verifier_.bcrypt_runs();
  EXPECT_FALSE(verifier_.Verify({"mallory", "secret"}));
  EXPECT_EQ(verifier_.bcrypt_runs(), before + 1);
}

TEST_F(BasicAuthVerifierTest, SuccessIsCachedSoTheNextScrapeSkipsBcrypt) {
  ASSERT_TRUE(verifier_.Verify({"alice", "secret"}));
  const uint64_t after_first = verifier_.bcrypt_runs();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(verifier_.Verify({"alice", "secret"}));
  EXPECT_EQ(verifier_.bcrypt_runs(), after_first);
}

TEST_F(BasicAuthVerifierTest, FailuresAreNeverCached) {
  const uint64_t before = verifier_.bcrypt_runs();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(verifier_.Verify({"alice", "wrong"}));
  EXPECT_EQ(verifier_.bcrypt_runs(), before + 3);
}

// Lookup knows recent failures as well as successes; Verify itself still decides failures with
// bcrypt (FailuresAreNeverCached), so only callers that ask Lookup first skip it.
TEST_F(BasicAuthVerifierTest, LookupRemembersSuccessesAndFailures) {
  EXPECT_EQ(verifier_.Lookup({"alice", "secret"}), BasicAuthVerifier::Known::kUnknown);
  EXPECT_EQ(verifier_.Lookup({"alice", "wrong"}), BasicAuthVerifier::Known::kUnknown);
  ASSERT_TRUE(verifier_.Verify({"alice", "secret"}));
  ASSERT_FALSE(verifier_.Verify({"alice", "wrong"}));
  ASSERT_FALSE(verifier_.Verify({"mallory", "secret"}));
  const uint64_t runs = verifier_.bcrypt_runs();
  EXPECT_EQ(verifier_.Lookup({"alice", "secret"}), BasicAuthVerifier::Known::kAllowed);
  EXPECT_EQ(verifier_.Lookup({"alice", "wrong"}), BasicAuthVerifier::Known::kDenied);
  EXPECT_EQ(verifier_.Lookup({"mallory", "secret"}), BasicAuthVerifier::Known::kDenied);
  EXPECT_EQ(verifier_.Lookup({"alice", "wrong2"}), BasicAuthVerifier::Known::kUnknown);
  EXPECT_EQ(verifier_.bcrypt_runs(), runs);
}

TEST(BasicAuthVerifier, MoreFailuresThanRememberedForgetTheOldest) {
  BasicAuthVerifier verifier({{"u", BcryptHash("pw")}});
  for (size_t i = 0; i <= kBasicAuthFailureEntries; ++i) {
    ASSERT_FALSE(verifier.Verify({"u", "guess" + std::to_string(i)}));
  }
  EXPECT_EQ(verifier.Lookup({"u", "guess0"}), BasicAuthVerifier::Known::kUnknown);
  EXPECT_EQ(verifier.Lookup({"u", "guess1"}), BasicAuthVerifier::Known::kDenied);
  EXPECT_EQ(verifier.Lookup({"u", "guess" + std::to_string(kBasicAuthFailureEntries)}),
            BasicAuthVerifier::Known::kDenied);
  // Failures never push out successes: they are remembered apart.
  ASSERT_TRUE(verifier.Verify({"u", "pw"}));
  for (size_t i = 0; i < kBasicAuthFailureEntries; ++i) {
    ASSERT_FALSE(verifier.Verify({"u", "again" + std::to_string(i)}));
  }
  EXPECT_TRUE(verifier.IsCached({"u", "pw"}));
}

// The cache key must not let one user's cached success answer for another pair that
// concatenates to the same bytes.
TEST(BasicAuthVerifier, CacheKeySeparatesUserFromPassword) {
  BasicAuthVerifier verifier({{"ab", BcryptHash("c")}, {"a", BcryptHash("zzz")}});
  ASSERT_TRUE(verifier.Verify({"ab", "c"}));
  EXPECT_FALSE(verifier.Verify({"a", "bc"}));
}

TEST_F(BasicAuthVerifierTest, PasswordWithANulByteNeverMatches) {
  // crypt would stop at the NUL and see "secret".
  EXPECT_FALSE(verifier_.Verify({"alice", std::string("secret\0tail", 11)}));
  EXPECT_TRUE(verifier_.Verify({"alice", "secret"}));
  EXPECT_FALSE(verifier_.Verify({"alice", std::string("secret\0tail", 11)}));
}

TEST(BasicAuthVerifier, OnlyTheFirst72BytesOfAPasswordCount) {
  const std::string long_password(72, 'p');
  BasicAuthVerifier verifier({{"u", BcryptHash(long_password)}});
  EXPECT_TRUE(verifier.Verify({"u", long_password + "ignored"}));
  EXPECT_FALSE(verifier.Verify({"u", long_password.substr(0, 71)}));
}

TEST(BasicAuthVerifier, MorePairsThanTheCacheHoldsStillVerify) {
  // One user per cache slot and one more: the oldest is evicted and pays bcrypt again.
  std::map<std::string, std::string> users;
  const std::string hash = BcryptHash("pw");
  for (size_t i = 0; i <= kBasicAuthCacheEntries; ++i) users["user" + std::to_string(i)] = hash;
  BasicAuthVerifier verifier(users);
  for (const auto& [user, unused] : users) ASSERT_TRUE(verifier.Verify({user, "pw"}));
  const uint64_t filled = verifier.bcrypt_runs();
  EXPECT_EQ(filled, kBasicAuthCacheEntries + 1);
  // The first verified was pushed out by the last; the others are still cached.
  EXPECT_TRUE(verifier.Verify({"user" + std::to_string(kBasicAuthCacheEntries - 1), "pw"}));
  EXPECT_EQ(verifier.bcrypt_runs(), filled);
  EXPECT_TRUE(verifier.Verify({users.begin()->first, "pw"}));
  EXPECT_EQ(verifier.bcrypt_runs(), filled + 1);
}

// Run under TSan: workers verify concurrently, sharing the cache.
TEST_F(BasicAuthVerifierTest, ConcurrentVerificationsAgree) {
  constexpr int kThreads = 8;
  constexpr int kEach = 20;
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const bool good = (t + i) % 4 != 0;
        const bool ok = verifier_.Verify({"alice", good ? "secret" : "nope"});
        if (ok == good) right.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(right.load(), kThreads * kEach);
}

}  // namespace
}  // namespace vmetrics::internal
