// The bcrypt thread of the HTTP server; see verification_queue.h.
#include "verification_queue.h"

#include <cstring>
#include <utility>

namespace vmetrics::internal {

VerificationQueue::VerificationQueue(const BasicAuthVerifier* verifier, size_t max_pending)
    : verifier_(verifier), max_pending_(max_pending), thread_([this] { Run(); }) {}

VerificationQueue::~VerificationQueue() { Stop(); }

bool VerificationQueue::Submit(BasicCredentials credentials, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || jobs_.size() >= max_pending_) return false;
    jobs_.push_back({std::move(credentials), std::move(done)});
  }
  wake_.notify_one();
  return true;
}

void VerificationQueue::Stop() {
  std::deque<Job> cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    cancelled.swap(jobs_);
  }
  wake_.notify_one();
  for (Job& job : cancelled) {
    explicit_bzero(job.credentials.password.data(), job.credentials.password.size());
    job.done(Verdict::kCancelled);
  }
  if (thread_.joinable()) thread_.join();
}

void VerificationQueue::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      // Stop takes the waiting jobs itself; here only the wake-up is left.
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const bool ok = verifier_->Verify(job.credentials);
    explicit_bzero(job.credentials.password.data(), job.credentials.password.size());
    job.done(ok ? Verdict::kAllowed : Verdict::kDenied);
  }
}

}  // namespace vmetrics::internal
