// SPDX-License-Identifier: Apache-2.0
// VerificationQueue (src/server/verification_queue.cc): verdicts arrive, a full queue refuses
// at once, Stop cancels what waits. A bcrypt at cost 12 (a quarter of a second or more) keeps
// the queue's thread busy while the test submits, microseconds apart.
#include "verification_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "security_test_util.h"

namespace vmetrics::internal {
namespace {

using namespace std::chrono_literals;
using security_test::BcryptHash;

// Made once: the cost-12 hash alone takes a quarter of a second or more.
const std::map<std::string, std::string>& Users() {
  static const std::map<std::string, std::string> users = {{"fast", BcryptHash("pw")},
                                                           {"slow", BcryptHash("pw", "$2b$", 12)}};
  return users;
}

class VerificationQueueTest : public ::testing::Test {
 protected:
  BasicAuthVerifier verifier_{Users()};
};

TEST_F(VerificationQueueTest, VerdictsArriveOnTheQueueThread) {
  VerificationQueue queue(&verifier_, 4);
  std::promise<Verdict> right;
  std::promise<Verdict> wrong;
  ASSERT_TRUE(queue.Submit({"fast", "pw"}, [&](Verdict v) { right.set_value(v); }));
  ASSERT_TRUE(queue.Submit({"fast", "nope"}, [&](Verdict v) { wrong.set_value(v); }));
  std::future<Verdict> right_verdict = right.get_future();
  std::future<Verdict> wrong_verdict = wrong.get_future();
  ASSERT_EQ(right_verdict.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(wrong_verdict.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(right_verdict.get(), Verdict::kAllowed);
  EXPECT_EQ(wrong_verdict.get(), Verdict::kDenied);
  EXPECT_TRUE(verifier_.IsCached({"fast", "pw"}));
}

TEST_F(VerificationQueueTest, FullQueueRefusesAtOnce) {
  VerificationQueue queue(&verifier_, 1);
  std::atomic<int> done{0};
  auto count = [&](Verdict) { done.fetch_add(1); };
  ASSERT_TRUE(queue.Submit({"slow", "wrong"}, count));
  // The first job runs for a quarter of a second; the queue holds one more, so of the next
  // two at least one is refused, immediately.
  const auto begin = std::chrono::steady_clock::now();
  const bool second = queue.Submit({"slow", "wrong"}, count);
  const bool third = queue.Submit({"slow", "wrong"}, count);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 100ms);
  EXPECT_FALSE(second && third);
  queue.Stop();
  EXPECT_EQ(done.load(), 1 + (second ? 1 : 0) + (third ? 1 : 0));
}

TEST_F(VerificationQueueTest, StopCancelsWaitingJobsAndAnswersEveryAcceptedOne) {
  VerificationQueue queue(&verifier_, 8);
  std::mutex mu;
  std::vector<Verdict> verdicts;
  auto record = [&](Verdict v) {
    std::lock_guard<std::mutex> lock(mu);
    verdicts.push_back(v);
  };
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(queue.Submit({"slow", "wrong"}, record));
  queue.Stop();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(verdicts.size(), 4u);
  int cancelled = 0;
  for (Verdict v : verdicts) {
    EXPECT_NE(v, Verdict::kAllowed);
    if (v == Verdict::kCancelled) ++cancelled;
  }
  // At most the one running was checked; the ones behind it were cancelled.
  EXPECT_GE(cancelled, 3);
}

// A client flooding the queue cannot keep another client out: the other's check takes the place
// of the flood's newest (answered kShed) and runs within a turn, not after the whole flood.
TEST_F(VerificationQueueTest, AFloodingClientCannotKeepAnotherOut) {
  constexpr size_t kMaxPending = 4;
  VerificationQueue queue(&verifier_, kMaxPending);
  std::mutex mu;
  std::vector<std::string> finished;  // "a" or "b" per verdict of a check that ran
  std::atomic<int> shed{0};
  std::atomic<int> answered{0};
  auto record = [&](std::string who) {
    return [&, who](Verdict v) {
      if (v == Verdict::kShed) {
        shed.fetch_add(1);
      } else {
        std::lock_guard<std::mutex> lock(mu);
        finished.push_back(who);
      }
      answered.fetch_add(1);
    };
  };
  // A quarter of a second of bcrypt keeps the thread busy while the rest is submitted.
  ASSERT_TRUE(queue.Submit("a", {"slow", "wrong"}, record("a")));
  int accepted = 1;
  for (int i = 0; i < 8; ++i) {
    if (queue.Submit("a", {"fast", "guess" + std::to_string(i)}, record("a"))) ++accepted;
  }
  EXPECT_LE(accepted, static_cast<int>(kMaxPending) + 1) << "the queue held more than its bound";
  ASSERT_TRUE(queue.Submit("b", {"fast", "pw"}, record("b")))
      << "a client with nothing waiting was refused behind a flood";
  EXPECT_EQ(shed.load(), 1);
  // Every accepted check is answered; b's among the first three (the slow one, one of a's).
  for (int i = 0; i < 1000 && answered.load() < accepted + 1; ++i) {
    std::this_thread::sleep_for(10ms);  // polling with a deadline, not synchronisation
  }
  queue.Stop();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(static_cast<int>(finished.size()) + shed.load(), accepted + 1);
  const auto b = std::find(finished.begin(), finished.end(), "b");
  ASSERT_NE(b, finished.end());
  EXPECT_LE(b - finished.begin(), 2) << "b waited behind more than one turn of a's";
  EXPECT_TRUE(verifier_.IsCached({"fast", "pw"}));
}

// Checks of a pair decided while they waited (one wrong password repeated) cost no bcrypt.
TEST_F(VerificationQueueTest, RepeatsOfADecidedPairCostNoBcrypt) {
  VerificationQueue queue(&verifier_, 8);
  const uint64_t before = verifier_.bcrypt_runs();
  std::vector<std::future<Verdict>> verdicts;
  std::vector<std::promise<Verdict>> promises(5);
  for (std::promise<Verdict>& p : promises) verdicts.push_back(p.get_future());
  ASSERT_TRUE(queue.Submit({"slow", "wrong"}, [&](Verdict v) { promises[0].set_value(v); }));
  for (size_t i = 1; i < promises.size(); ++i) {
    ASSERT_TRUE(queue.Submit({"fast", "nope"}, [&, i](Verdict v) { promises[i].set_value(v); }));
  }
  for (std::future<Verdict>& v : verdicts) {
    ASSERT_EQ(v.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(v.get(), Verdict::kDenied);
  }
  EXPECT_EQ(verifier_.bcrypt_runs(), before + 2);  // the slow guess, and "nope" once
}

TEST_F(VerificationQueueTest, SubmitAfterStopIsRefusedAndStopIsIdempotent) {
  VerificationQueue queue(&verifier_, 4);
  queue.Stop();
  queue.Stop();
  bool called = false;
  EXPECT_FALSE(queue.Submit({"fast", "pw"}, [&](Verdict) { called = true; }));
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace vmetrics::internal
