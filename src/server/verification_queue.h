// SPDX-License-Identifier: Apache-2.0
// File: verification_queue.h (internal to src/server)
//
// VerificationQueue: runs the bcrypt checks that the basic-auth cache cannot answer on one
// thread of its own, so libmicrohttpd's worker threads never block on bcrypt, and shares that
// thread fairly between clients.
//
// Why a thread: a worker thread runs an event loop for many connections, and a bcrypt at cost
// 10 takes about 0.1 s. Checked on the workers, a few clients looping on wrong passwords kept
// both workers busy and delayed every other scrape by seconds (measured in
// docs/reliability.md). Now the server suspends the connection (MHD_suspend_connection),
// queues the check here, and the queue's thread resumes the connection when the verdict is in;
// scrapes whose credentials are cached never wait. One thread caps what guessing can burn at
// one core, as exporter-toolkit's bcrypt mutex does; at most `max_pending` checks wait, and a
// request that finds no place is answered 429 at once instead of queueing without bound.
//
// Why fair: with one first-come queue, a flood from one client kept the queue full, and every
// other client's first login (not yet cached) was answered 429 for as long as the flood
// lasted. Now each client (the server passes the peer address) has its own line, and the
// thread takes one check from each waiting client in turn. When the queue is full, a check
// from a client with fewer waiting checks takes the place of the newest check of the client
// with the most (that one is answered kShed, a 429), so one client can hold up another's check
// for at most one bcrypt per other waiting client. Before running a check the thread asks
// BasicAuthVerifier::Lookup, so checks of a pair that was decided while they waited (a flood
// repeating one wrong password) cost no bcrypt.
//
// Thread safety: Submit may be called from any number of threads; Stop from one thread, not
// concurrently with itself. `done` callbacks run on the queue's thread, in Stop, or (kShed) in
// the Submit that displaced the job.
#ifndef VMETRICS_SERVER_VERIFICATION_QUEUE_H_
#define VMETRICS_SERVER_VERIFICATION_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "basic_auth.h"

namespace vmetrics::internal {

// kShed: the job gave its place to another client's (see above); answer it like a full queue.
enum class Verdict : uint8_t { kAllowed, kDenied, kCancelled, kShed };

class VerificationQueue {
 public:
  // Called once per accepted job with its verdict: kAllowed or kDenied from the verifier,
  // kCancelled when Stop came before the job ran, kShed when it gave its place away.
  using Done = std::function<void(Verdict)>;

  // Starts the thread. `verifier` must outlive the queue. REQUIRES: max_pending >= 1.
  VerificationQueue(const BasicAuthVerifier* verifier, size_t max_pending);
  VerificationQueue(const VerificationQueue&) = delete;
  VerificationQueue& operator=(const VerificationQueue&) = delete;
  ~VerificationQueue();  // Stop()

  // Submit
  //
  // Queues a check of `credentials` for `client` (any key that tells clients apart; the
  // server uses the peer address). False, and `done` is never called, when Stop has been
  // called, or when max_pending jobs wait and none can be displaced (this client already
  // waits for as many as any other, less one).
  //
  // Example:
  //   std::promise<Verdict> verdict;
  //   ASSERT_TRUE(queue.Submit("10.0.0.7", {"alice", "secret"},
  //                            [&](Verdict v) { verdict.set_value(v); }));
  //   EXPECT_EQ(verdict.get_future().get(), Verdict::kAllowed);
  bool Submit(std::string client, BasicCredentials credentials, Done done);
  // One anonymous client: first come, first served.
  bool Submit(BasicCredentials credentials, Done done) {
    return Submit(std::string(), std::move(credentials), std::move(done));
  }

  // Stop
  //
  // Refuses new jobs, calls `done` with kCancelled for every job still waiting, lets the
  // running one finish (its `done` gets its verdict) and joins the thread. Idempotent. When it
  // returns, every accepted job's `done` has returned.
  void Stop();

 private:
  struct Job {
    BasicCredentials credentials;
    Done done;
  };
  // One client's waiting jobs, oldest first.
  struct Line {
    std::string client;
    std::deque<Job> jobs;
  };

  void Run();

  const BasicAuthVerifier* verifier_;
  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable wake_;
  // Clients with waiting jobs, in turn: the front one is served next and then goes to the back
  // (or away, with no job left). Guarded by mu_; never more than max_pending_ lines.
  std::list<Line> lines_;
  size_t pending_ = 0;     // jobs in lines_; guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_VERIFICATION_QUEUE_H_
