// VerificationQueue (src/server/verification_queue.cc): verdicts arrive, a full queue refuses
// at once, Stop cancels what waits. A bcrypt at cost 12 (a quarter of a second or more) keeps
// the queue's thread busy while the test submits, microseconds apart.
#include "verification_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
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
