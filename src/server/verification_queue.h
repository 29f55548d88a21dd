// File: verification_queue.h (internal to src/server)
//
// VerificationQueue: runs the bcrypt checks that the basic-auth cache cannot answer on one
// thread of its own, so libmicrohttpd's worker threads never block on bcrypt.
//
// Why: a worker thread runs an event loop for many connections, and a bcrypt at cost 10 takes
// about 0.1 s. Checked on the workers, a few clients looping on wrong passwords kept both
// workers busy and delayed every other scrape by seconds (measured in docs/reliability.md).
// Now the server suspends the connection (MHD_suspend_connection), queues the check here, and
// the queue's thread resumes the connection when the verdict is in; scrapes whose credentials
// are cached never wait. One thread caps what guessing can burn at one core, as
// exporter-toolkit's bcrypt mutex does; at most `max_pending` checks wait, and a request that
// finds the queue full is answered 429 at once instead of queueing without bound.
//
// Thread safety: Submit may be called from any number of threads; Stop from one thread, not
// concurrently with itself. `done` callbacks run on the queue's thread, or in Stop.
#ifndef VMETRICS_SERVER_VERIFICATION_QUEUE_H_
#define VMETRICS_SERVER_VERIFICATION_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "basic_auth.h"

namespace vmetrics::internal {

enum class Verdict : uint8_t { kAllowed, kDenied, kCancelled };

class VerificationQueue {
 public:
  // Called once per accepted job with its verdict: kAllowed or kDenied from the verifier,
  // kCancelled when Stop came before the job ran.
  using Done = std::function<void(Verdict)>;

  // Starts the thread. `verifier` must outlive the queue.
  VerificationQueue(const BasicAuthVerifier* verifier, size_t max_pending);
  VerificationQueue(const VerificationQueue&) = delete;
  VerificationQueue& operator=(const VerificationQueue&) = delete;
  ~VerificationQueue();  // Stop()

  // Submit
  //
  // Queues a check of `credentials`. False, and `done` is never called, when max_pending jobs
  // are already waiting or Stop has been called.
  //
  // Example:
  //   std::promise<Verdict> verdict;
  //   ASSERT_TRUE(queue.Submit({"alice", "secret"}, [&](Verdict v) { verdict.set_value(v); }));
  //   EXPECT_EQ(verdict.get_future().get(), Verdict::kAllowed);
  bool Submit(BasicCredentials credentials, Done done);

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

  void Run();

  const BasicAuthVerifier* verifier_;
  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;   // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_VERIFICATION_QUEUE_H_
