// SPDX-License-Identifier: Apache-2.0
// The bcrypt thread of the HTTP server, shared fairly between clients; see
// verification_queue.h.
#include "verification_queue.h"

#include <cstring>
#include <optional>
#include <utility>

namespace vmetrics::internal {
namespace {

void Forget(BasicCredentials* credentials) {
  explicit_bzero(credentials->password.data(), credentials->password.size());
}

}  // namespace

VerificationQueue::VerificationQueue(const BasicAuthVerifier* verifier, size_t max_pending)
    : verifier_(verifier), max_pending_(max_pending), thread_([this] { Run(); }) {}

VerificationQueue::~VerificationQueue() { Stop(); }

bool VerificationQueue::Submit(std::string client, BasicCredentials credentials, Done done) {
  std::optional<Job> shed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    auto mine = lines_.end();
    auto heaviest = lines_.end();
    for (auto it = lines_.begin(); it != lines_.end(); ++it) {
      if (it->client == client) mine = it;
      if (heaviest == lines_.end() || it->jobs.size() > heaviest->jobs.size()) heaviest = it;
    }
    if (pending_ >= max_pending_) {
      const size_t my_jobs = mine != lines_.end() ? mine->jobs.size() : 0;
      // Displace only a client that would still wait for more than this one afterwards, so
      // two clients cannot take each other's places back and forth.
      if (heaviest == lines_.end() || heaviest->jobs.size() <= my_jobs + 1) return false;
      shed = std::move(heaviest->jobs.back());
      heaviest->jobs.pop_back();  // it had at least two: its line stays
      --pending_;
    }
    if (mine == lines_.end()) mine = lines_.insert(lines_.end(), Line{std::move(client), {}});
    mine->jobs.push_back({std::move(credentials), std::move(done)});
    ++pending_;
  }
  wake_.notify_one();
  if (shed.has_value()) {
    Forget(&shed->credentials);
    shed->done(Verdict::kShed);
  }
  return true;
}

void VerificationQueue::Stop() {
  std::list<Line> cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    cancelled.swap(lines_);
    pending_ = 0;
  }
  wake_.notify_one();
  for (Line& line : cancelled) {
    for (Job& job : line.jobs) {
      Forget(&job.credentials);
      job.done(Verdict::kCancelled);
    }
  }
  if (thread_.joinable()) thread_.join();
}

void VerificationQueue::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !lines_.empty(); });
      // Stop takes the waiting jobs itself; here only the wake-up is left.
      if (lines_.empty()) return;
      Line& line = lines_.front();
      job = std::move(line.jobs.front());
      line.jobs.pop_front();
      --pending_;
      // Served: to the back of the turn, or away with nothing left to wait for.
      if (line.jobs.empty()) {
        lines_.pop_front();
      } else {
        lines_.splice(lines_.end(), lines_, lines_.begin());
      }
    }
    // A pair decided while this job waited (the same guess repeated) needs no bcrypt.
    bool ok = false;
    switch (verifier_->Lookup(job.credentials)) {
      case BasicAuthVerifier::Known::kAllowed:
        ok = true;
        break;
      case BasicAuthVerifier::Known::kDenied:
        ok = false;
        break;
      case BasicAuthVerifier::Known::kUnknown:
        ok = verifier_->Verify(job.credentials);
        break;
    }
    Forget(&job.credentials);
    job.done(ok ? Verdict::kAllowed : Verdict::kDenied);
  }
}

}  // namespace vmetrics::internal
