// SPDX-License-Identifier: Apache-2.0
// VerificationQueue (src/server/verification_queue.cc): verdicts arrive, a full queue refuses
// at once, Stop cancels what waits, and the order and displacement rules by recent denials.
// With real bcrypt, one at cost 12 (a quarter of a second or more) keeps the queue's thread
// busy while the test submits, microseconds apart; the policy tests stand in a check that runs
// only when the test lets it (GatedCheck), so the order they see is the queue's, not timing's.
#include "verification_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
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

// ---- the policy, with a check the test runs one at a time ----

// A check that records which job it started (by the credentials' user, used as a label) and
// then waits for the test to let one check finish; the verdict is "allowed" for the password
// "good". Every wait is bounded, so a broken queue fails the test rather than hanging it.
class GatedCheck {
 public:
  VerificationQueue::Check AsCheck() {
    return [this](const BasicCredentials& c) {
      std::unique_lock<std::mutex> lock(mu_);
      started_.push_back(c.user);
      changed_.notify_all();
      changed_.wait_for(lock, 30s, [this] { return permits_ > 0 || open_; });
      if (permits_ > 0) --permits_;
      return c.password == "good";
    };
  }
  // Waits until `count` checks have started; returns the labels of those started so far.
  std::vector<std::string> WaitStarted(size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, 30s, [&] { return started_.size() >= count; });
    return started_;
  }
  // Lets one waiting (or the next) check finish.
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    ++permits_;
    changed_.notify_all();
  }
  // Lets every check finish from now on (so Stop never waits for the test).
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> started_;
  int permits_ = 0;
  bool open_ = false;
};

// Verdicts by job label, filled by the `done` callbacks.
class Verdicts {
 public:
  VerificationQueue::Done For(std::string label) {
    return [this, label](Verdict v) {
      std::lock_guard<std::mutex> lock(mu_);
      verdicts_[label] = v;
      changed_.notify_all();
    };
  }
  // The verdict of `label`, waiting for it up to 30 s; kCancelled when none came.
  Verdict Of(const std::string& label) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, 30s, [&] { return verdicts_.count(label) != 0; });
    auto it = verdicts_.find(label);
    return it != verdicts_.end() ? it->second : Verdict::kCancelled;
  }
  bool Has(const std::string& label) {
    std::lock_guard<std::mutex> lock(mu_);
    return verdicts_.count(label) != 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Verdict> verdicts_;
};

// Runs one wrong check from each client in `clients`, one after the other, `times` times:
// each then has that many recent denials.
void Deny(VerificationQueue* queue, GatedCheck* gate, Verdicts* verdicts,
          const std::vector<std::string>& clients, int times, size_t* started) {
  for (int t = 0; t < times; ++t) {
    for (const std::string& client : clients) {
      // Numbered by the checks started so far: unique across calls, so the verdict waited for
      // is this check's.
      const std::string label = "deny-" + client + "-" + std::to_string(*started);
      ASSERT_TRUE(queue->Submit(client, {label, "wrong"}, verdicts->For(label)));
      gate->WaitStarted(++*started);
      gate->Finish();
      ASSERT_EQ(verdicts->Of(label), Verdict::kDenied);
    }
  }
}

// Clients denied recently wait behind clients that were not, however early they queued; among
// each, the lines take turns.
TEST(VerificationQueuePolicy, ClientsWithoutRecentDenialsAreServedFirst) {
  GatedCheck gate;
  Verdicts verdicts;
  VerificationQueue queue(gate.AsCheck(), 16);
  size_t started = 0;
  Deny(&queue, &gate, &verdicts, {"guesser-1", "guesser-2"}, 1, &started);
  ASSERT_EQ(queue.RecentDenials("guesser-1"), 1u);
  // The thread is busy with g1-a while the rest queue.
  ASSERT_TRUE(queue.Submit("guesser-1", {"g1-a", "wrong"}, verdicts.For("g1-a")));
  gate.WaitStarted(++started);
  ASSERT_TRUE(queue.Submit("guesser-1", {"g1-b", "wrong"}, verdicts.For("g1-b")));
  ASSERT_TRUE(queue.Submit("guesser-2", {"g2-a", "wrong"}, verdicts.For("g2-a")));
  ASSERT_TRUE(queue.Submit("user-1", {"u1-a", "good"}, verdicts.For("u1-a")));
  ASSERT_TRUE(queue.Submit("user-1", {"u1-b", "good"}, verdicts.For("u1-b")));
  ASSERT_TRUE(queue.Submit("user-2", {"u2-a", "good"}, verdicts.For("u2-a")));
  for (int i = 0; i < 5; ++i) {
    gate.Finish();
    gate.WaitStarted(++started);
  }
  gate.Open();
  const std::vector<std::string> order = gate.WaitStarted(started);
  ASSERT_EQ(order.size(), started);
  // After g1-a (already running): the users in turn, then the guessers, the one denied less
  // (guesser-2, once; guesser-1 twice by then) first.
  EXPECT_EQ(std::vector<std::string>(order.end() - 6, order.end()),
            (std::vector<std::string>{"g1-a", "u1-a", "u2-a", "u1-b", "g2-a", "g1-b"}));
  EXPECT_EQ(verdicts.Of("u2-a"), Verdict::kAllowed);
  EXPECT_EQ(verdicts.Of("g1-b"), Verdict::kDenied);
  EXPECT_EQ(queue.RecentDenials("guesser-1"), 3u);
  EXPECT_EQ(queue.RecentDenials("user-1"), 0u);
}

// The measured failure of lines alone: the queue full of one-job lines from distinct guessing
// addresses, and a first login from elsewhere. It takes the place of the newest check of the
// line denied most; the next one that of the line denied most after it.
TEST(VerificationQueuePolicy, AFirstLoginDisplacesTheCheckOfTheClientDeniedMost) {
  constexpr size_t kMaxPending = 4;
  GatedCheck gate;
  Verdicts verdicts;
  VerificationQueue queue(gate.AsCheck(), kMaxPending);
  size_t started = 0;
  Deny(&queue, &gate, &verdicts, {"g1", "g2", "g3", "g4", "g5"}, 1, &started);
  Deny(&queue, &gate, &verdicts, {"g3"}, 2, &started);  // g3: 3 denials
  Deny(&queue, &gate, &verdicts, {"g2"}, 1, &started);  // g2: 2 denials
  ASSERT_TRUE(queue.Submit("g5", {"running", "wrong"}, verdicts.For("running")));
  gate.WaitStarted(++started);
  for (const char* g : {"g1", "g2", "g3", "g4"}) {
    ASSERT_TRUE(
        queue.Submit(g, {std::string("q-") + g, "wrong"}, verdicts.For(std::string("q-") + g)));
  }
  ASSERT_TRUE(queue.Submit("user-1", {"u1", "good"}, verdicts.For("u1")));
  EXPECT_EQ(verdicts.Of("q-g3"), Verdict::kShed);
  ASSERT_TRUE(queue.Submit("user-2", {"u2", "good"}, verdicts.For("u2")));
  EXPECT_EQ(verdicts.Of("q-g2"), Verdict::kShed);
  // Left: g1 and g4 (one denial, one check each) and the two users. A guesser of g1's standing
  // finds no line of its standing heavier than its own, one denied more often finds nothing.
  EXPECT_FALSE(queue.Submit("g1", {"q-g1-again", "wrong"}, verdicts.For("q-g1-again")));
  EXPECT_FALSE(queue.Submit("g3", {"q-g3-again", "wrong"}, verdicts.For("q-g3-again")));
  // A third first login takes the place of the first of the two guessers.
  ASSERT_TRUE(queue.Submit("user-3", {"u3", "good"}, verdicts.For("u3")));
  EXPECT_EQ(verdicts.Of("q-g1"), Verdict::kShed);
  gate.Open();
  for (const char* label : {"u1", "u2", "u3"}) {
    EXPECT_EQ(verdicts.Of(label), Verdict::kAllowed) << label;
  }
  EXPECT_EQ(verdicts.Of("q-g4"), Verdict::kDenied);
  const std::vector<std::string> order = gate.WaitStarted(started + 4);
  EXPECT_EQ(std::vector<std::string>(order.end() - 4, order.end()),
            (std::vector<std::string>{"u1", "u2", "u3", "q-g4"}))
      << "the first logins waited behind the guesses";
  EXPECT_FALSE(verdicts.Has("q-g1-again"));
  EXPECT_FALSE(verdicts.Has("q-g3-again"));
}

// Among clients of the same standing, the rule of lines alone: only a line with more than one
// check more than the newcomer's gives one up, so two clients never trade places back and forth.
TEST(VerificationQueuePolicy, AmongEqualsOnlyAHeavierLineGivesWay) {
  GatedCheck gate;
  Verdicts verdicts;
  VerificationQueue queue(gate.AsCheck(), 3);
  size_t started = 0;
  ASSERT_TRUE(queue.Submit("a", {"a-running", "good"}, verdicts.For("a-running")));
  gate.WaitStarted(++started);
  ASSERT_TRUE(queue.Submit("a", {"a-1", "good"}, verdicts.For("a-1")));
  ASSERT_TRUE(queue.Submit("a", {"a-2", "good"}, verdicts.For("a-2")));
  ASSERT_TRUE(queue.Submit("b", {"b-1", "good"}, verdicts.For("b-1")));  // one free place
  // Full. a waits for 2, more than c's 0 + 1: c takes the place of a's newest.
  ASSERT_TRUE(queue.Submit("c", {"c-1", "good"}, verdicts.For("c-1")));
  EXPECT_EQ(verdicts.Of("a-2"), Verdict::kShed);
  // a, b and c wait for one each: nobody gives way to a fourth client, nor to b again.
  EXPECT_FALSE(queue.Submit("d", {"d-1", "good"}, verdicts.For("d-1")));
  EXPECT_FALSE(queue.Submit("b", {"b-2", "good"}, verdicts.For("b-2")));
  gate.Open();
  for (const char* label : {"a-running", "a-1", "b-1", "c-1"}) {
    EXPECT_EQ(verdicts.Of(label), Verdict::kAllowed) << label;
  }
}

// An allowed check clears its client's record; denials are forgotten after the expiry, and the
// record keeps at most max_clients clients, forgetting the one denied longest ago.
TEST(VerificationQueuePolicy, DenialsAreClearedBySuccessForgottenAfterExpiryAndBounded) {
  GatedCheck gate;
  Verdicts verdicts;
  VerificationQueue queue(gate.AsCheck(), 8, {.max_clients = 3, .expiry = 1h});
  size_t started = 0;
  Deny(&queue, &gate, &verdicts, {"a", "b", "c"}, 1, &started);
  Deny(&queue, &gate, &verdicts, {"a"}, 1, &started);
  EXPECT_EQ(queue.RecentDenials("a"), 2u);
  Deny(&queue, &gate, &verdicts, {"d"}, 1, &started);  // b was denied longest ago
  EXPECT_EQ(queue.RecentDenials("b"), 0u);
  EXPECT_EQ(queue.RecentDenials("c"), 1u);
  EXPECT_EQ(queue.RecentDenials("d"), 1u);
  ASSERT_TRUE(queue.Submit("a", {"a-good", "good"}, verdicts.For("a-good")));
  gate.WaitStarted(++started);
  gate.Finish();
  ASSERT_EQ(verdicts.Of("a-good"), Verdict::kAllowed);
  EXPECT_EQ(queue.RecentDenials("a"), 0u);
  gate.Open();
  queue.Stop();

  GatedCheck brief_gate;
  brief_gate.Open();
  VerificationQueue brief(brief_gate.AsCheck(), 8, {.expiry = 50ms});
  ASSERT_TRUE(brief.Submit("e", {"e-1", "wrong"}, verdicts.For("e-1")));
  ASSERT_EQ(verdicts.Of("e-1"), Verdict::kDenied);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (brief.RecentDenials("e") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);  // polling with a deadline, not synchronisation
  }
  EXPECT_EQ(brief.RecentDenials("e"), 0u) << "the denial was never forgotten";
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
