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
// docs/reliability.md). So the server suspends the connection (MHD_suspend_connection),
// queues the check here, and the queue's thread resumes the connection when the verdict is in;
// scrapes whose credentials are cached never wait. One thread caps what guessing can burn at
// one core, as exporter-toolkit's bcrypt mutex does; at most `max_pending` checks wait, and a
// request that finds no place is answered 429 at once instead of queueing without bound.
//
// Why fair: with one first-come queue, a flood from one client kept the queue full, and every
// other client's first login (not yet cached) was answered 429 for as long as the flood
// lasted. So each client (the server passes the peer address, an IPv6 client's /64) has its
// own line, and the thread takes one check from each waiting client in turn. When the queue is
// full, a check from a client with fewer waiting checks takes the place of the newest check of
// the client with the most (that one is answered kShed, a 429), so one client can hold up
// another's check for at most one bcrypt per other waiting client. Before running a check the
// thread asks BasicAuthVerifier::Lookup, so checks of a pair that was decided while they
// waited (a flood repeating one wrong password) cost no bcrypt.
//
// Why denials count: lines alone do not hold against a flood from many addresses. With 16 or
// more attacking addresses the queue is full of one-job lines, no line has more than a
// newcomer's one job plus one, so a valid user's first login from another address found no
// place: measured, 5 of 6 to 12 of 12 such logins were answered 429 while 24 addresses
// guessed. What tells a guesser from a user is its record: an attacking address is denied
// check after check, a user almost never. So the queue remembers, per client, the denials of
// the last kDenialExpiry (how many, and when the last was), and a client's standing is that
// count, fewer being better:
//
//   Order. The thread serves the lines of the best standing first (round-robin among them),
//   so a client with no recent denial waits for at most the check running and the other
//   clean clients' checks, however many guessers wait.
//   Displacement. A full queue lets a check take the place of the newest check of the line
//   whose client was denied most (then the one with most jobs), if that is more often than
//   its own client; otherwise, among lines of its own standing, the rule above (the heaviest
//   line, if it has more than one check more).
//
// A denied user (a typo) thus waits behind clients with fewer denials while a flood lasts, and
// is served like anyone once it passes: an allowed check clears its client's denials. The
// memory is bounded: at most kDeniedClientsRemembered clients, the one denied longest ago
// forgotten first, each entry about 160 bytes with the allocator's overhead (about 640 KiB at
// most). A flood from more addresses than that (or from more IPv6 /64s) forgets its own
// addresses and falls back to the per-line rule: no worse than lines alone. Clients are told
// apart by what the server passes: IPv4 addresses, and IPv6 clients by their /64, the
// smallest network one host is usually given (peer_address.h).
//
// Thread safety: Submit and RecentDenials may be called from any number of threads; Stop from
// one thread, not concurrently with itself. `done` callbacks run on the queue's thread, in
// Stop, or (kShed) in the Submit that displaced the job; the check runs on the queue's thread.
#ifndef VMETRICS_SERVER_VERIFICATION_QUEUE_H_
#define VMETRICS_SERVER_VERIFICATION_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "basic_auth.h"

namespace vmetrics::internal {

// kShed: the job gave its place to another client's (see above); answer it like a full queue.
enum class Verdict : uint8_t { kAllowed, kDenied, kCancelled, kShed };

// Clients whose denials are remembered at once (see above).
inline constexpr size_t kDeniedClientsRemembered = 4096;
// How long a denial counts against its client. Long enough to outlast a pause in a flood, short
// enough that a user who mistyped is soon back to a clean record whether or not they log in.
inline constexpr std::chrono::minutes kDenialExpiry{10};

// What the queue remembers of denied clients (defaults above; tests shrink them).
struct DenialMemoryLimits {
  size_t max_clients = kDeniedClientsRemembered;  // >= 1
  std::chrono::steady_clock::duration expiry = kDenialExpiry;
};

class VerificationQueue {
 public:
  // Called once per accepted job with its verdict: kAllowed or kDenied from the verifier,
  // kCancelled when Stop came before the job ran, kShed when it gave its place away.
  using Done = std::function<void(Verdict)>;

  // Decides one check on the queue's thread: true when the credentials are good.
  using Check = std::function<bool(const BasicCredentials&)>;

  // Starts the thread. Each check asks `verifier` (which must outlive the queue) Lookup, and
  // Verify (a bcrypt) only when Lookup does not know. REQUIRES: max_pending >= 1.
  VerificationQueue(const BasicAuthVerifier* verifier, size_t max_pending,
                    DenialMemoryLimits denials = {});
  // The same with any `check` (tests stand a controllable one in for bcrypt).
  VerificationQueue(Check check, size_t max_pending, DenialMemoryLimits denials = {});
  VerificationQueue(const VerificationQueue&) = delete;
  VerificationQueue& operator=(const VerificationQueue&) = delete;
  ~VerificationQueue();  // Stop()

  // Submit
  //
  // Queues a check of `credentials` for `client` (any key that tells clients apart; the
  // server uses the peer address, or an IPv6 peer's /64). False, and `done` is never called,
  // when Stop has been called, or when max_pending jobs wait and none can be displaced (no
  // client waiting was denied more often than this one recently, and none of the same
  // standing waits for more than one check more than it).
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

  // RecentDenials
  //
  // How many of `client`'s checks were denied within the expiry of each other, the last of
  // them less than the expiry ago; 0 when none, or forgotten. Its standing (see above).
  //
  // Example:
  //   // after a check of {"alice", "guess"} from "10.0.0.7" was answered kDenied:
  //   EXPECT_EQ(queue.RecentDenials("10.0.0.7"), 1u);
  uint32_t RecentDenials(const std::string& client);

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

  // A client's recent denials: how many, and when the last came.
  struct Denials {
    std::string client;
    uint32_t count = 0;
    std::chrono::steady_clock::time_point last;
  };
  using Clock = std::chrono::steady_clock;

  void Run();
  // With mu_ held. `client`'s standing (RecentDenials), forgetting an expired record.
  uint32_t DenialsLocked(const std::string& client, Clock::time_point now);
  // With mu_ held. A verdict on `client`'s check: a denial counts, an allowed check clears.
  void RecordLocked(const std::string& client, bool allowed, Clock::time_point now);
  // With mu_ held, lines_ not empty. The line to serve next: the first in turn of those whose
  // clients have the fewest recent denials.
  std::list<Line>::iterator NextLineLocked(Clock::time_point now);

  const Check check_;
  const size_t max_pending_;
  const DenialMemoryLimits denial_limits_;
  std::mutex mu_;
  std::condition_variable wake_;
  // Clients with waiting jobs, in turn: a line served goes to the back (or away, with no job
  // left). Guarded by mu_; never more than max_pending_ lines.
  std::list<Line> lines_;
  size_t pending_ = 0;     // jobs in lines_; guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  // Denied clients, the one denied most recently first, and an index of them by client; at
  // most denial_limits_.max_clients. Guarded by mu_.
  std::list<Denials> denied_;
  std::unordered_map<std::string, std::list<Denials>::iterator> denied_index_;
  std::thread thread_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_VERIFICATION_QUEUE_H_
