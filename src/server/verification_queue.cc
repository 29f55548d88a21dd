// SPDX-License-Identifier: Apache-2.0
// The bcrypt thread of the HTTP server, shared fairly between clients; see
// verification_queue.h.
#include "verification_queue.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

namespace vmetrics::internal {
namespace {

void Forget(BasicCredentials* credentials) {
  explicit_bzero(credentials->password.data(), credentials->password.size());
}

}  // namespace

VerificationQueue::VerificationQueue(const BasicAuthVerifier* verifier, size_t max_pending,
                                     DenialMemoryLimits denials)
    : VerificationQueue(
          [verifier](const BasicCredentials& credentials) {
            // A pair decided while this job waited (the same guess repeated) needs no bcrypt.
            switch (verifier->Lookup(credentials)) {
              case BasicAuthVerifier::Known::kAllowed:
                return true;
              case BasicAuthVerifier::Known::kDenied:
                return false;
              case BasicAuthVerifier::Known::kUnknown:
                break;
            }
            return verifier->Verify(credentials);
          },
          max_pending, denials) {}

VerificationQueue::VerificationQueue(Check check, size_t max_pending, DenialMemoryLimits denials)
    : check_(std::move(check)),
      max_pending_(max_pending),
      denial_limits_(denials),
      thread_([this] { Run(); }) {}

VerificationQueue::~VerificationQueue() { Stop(); }

bool VerificationQueue::Submit(std::string client, BasicCredentials credentials, Done done) {
  std::optional<Job> shed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    auto mine = lines_.end();
    for (auto it = lines_.begin(); it != lines_.end(); ++it) {
      if (it->client == client) mine = it;
    }
    if (pending_ >= max_pending_) {
      const Clock::time_point now = Clock::now();
      const uint32_t my_denials = DenialsLocked(client, now);
      const size_t my_jobs = mine != lines_.end() ? mine->jobs.size() : 0;
      // A line whose client was denied more often than this one gives way first: the one
      // denied most, then the one waiting for most.
      auto victim = lines_.end();
      uint32_t victim_denials = my_denials;
      // Else, among lines of this client's standing, only one that would still wait for more
      // than this client afterwards, so two clients cannot take each other's places back and
      // forth.
      auto heaviest = lines_.end();
      for (auto it = lines_.begin(); it != lines_.end(); ++it) {
        const uint32_t denials = DenialsLocked(it->client, now);
        if (denials > victim_denials || (denials == victim_denials && victim != lines_.end() &&
                                         it->jobs.size() > victim->jobs.size())) {
          victim = it;
          victim_denials = denials;
        }
        if (denials == my_denials && it->jobs.size() > my_jobs + 1 &&
            (heaviest == lines_.end() || it->jobs.size() > heaviest->jobs.size())) {
          heaviest = it;
        }
      }
      if (victim == lines_.end()) victim = heaviest;
      if (victim == lines_.end()) return false;
      shed = std::move(victim->jobs.back());
      victim->jobs.pop_back();
      --pending_;
      if (victim->jobs.empty()) lines_.erase(victim);  // never `mine`: it has fewer denials
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

uint32_t VerificationQueue::RecentDenials(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  return DenialsLocked(client, Clock::now());
}

uint32_t VerificationQueue::DenialsLocked(const std::string& client, Clock::time_point now) {
  auto it = denied_index_.find(client);
  if (it == denied_index_.end()) return 0;
  if (now - it->second->last >= denial_limits_.expiry) {
    denied_.erase(it->second);
    denied_index_.erase(it);
    return 0;
  }
  return it->second->count;
}

void VerificationQueue::RecordLocked(const std::string& client, bool allowed,
                                     Clock::time_point now) {
  auto it = denied_index_.find(client);
  if (allowed) {
    if (it != denied_index_.end()) {
      denied_.erase(it->second);
      denied_index_.erase(it);
    }
    return;
  }
  if (it != denied_index_.end()) {
    Denials& record = *it->second;
    // An expired record starts over rather than adding to denials long past.
    record.count = now - record.last >= denial_limits_.expiry ? 1
                   : record.count < UINT32_MAX                ? record.count + 1
                                                              : record.count;
    record.last = now;
    denied_.splice(denied_.begin(), denied_, it->second);
    return;
  }
  denied_.push_front(Denials{client, 1, now});
  denied_index_.emplace(client, denied_.begin());
  if (denied_.size() > denial_limits_.max_clients) {
    denied_index_.erase(denied_.back().client);
    denied_.pop_back();
  }
}

std::list<VerificationQueue::Line>::iterator VerificationQueue::NextLineLocked(
    Clock::time_point now) {
  auto next = lines_.begin();
  uint32_t fewest = UINT32_MAX;
  for (auto it = lines_.begin(); it != lines_.end(); ++it) {
    const uint32_t denials = DenialsLocked(it->client, now);
    if (denials < fewest) {
      next = it;
      fewest = denials;
      if (denials == 0) break;  // none better
    }
  }
  return next;
}

void VerificationQueue::Run() {
  for (;;) {
    Job job;
    std::string client;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !lines_.empty(); });
      // Stop takes the waiting jobs itself; here only the wake-up is left.
      if (lines_.empty()) return;
      const auto line = NextLineLocked(Clock::now());
      job = std::move(line->jobs.front());
      line->jobs.pop_front();
      --pending_;
      client = line->client;
      // Served: to the back of the turn, or away with nothing left to wait for.
      if (line->jobs.empty()) {
        lines_.erase(line);
      } else {
        lines_.splice(lines_.end(), lines_, line);
      }
    }
    const bool ok = check_(job.credentials);
    Forget(&job.credentials);
    {
      std::lock_guard<std::mutex> lock(mu_);
      RecordLocked(client, ok, Clock::now());
    }
    job.done(ok ? Verdict::kAllowed : Verdict::kDenied);
  }
}

}  // namespace vmetrics::internal
