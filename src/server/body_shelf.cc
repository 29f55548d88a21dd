// SPDX-License-Identifier: Apache-2.0
// A bounded number of rendered /metrics bodies; see body_shelf.h.
#include "body_shelf.h"

#include <utility>
#include <vector>

namespace vmetrics::internal {

BodyShelf::BodyShelf(size_t max_per_kind)
    : max_per_kind_(max_per_kind < 1 ? 1 : max_per_kind), shared_(std::make_shared<Shared>()) {}

std::shared_ptr<const std::string> BodyShelf::Get(size_t kind,
                                                  const std::function<std::string()>& make) {
  {
    std::unique_lock<std::mutex> lock(shared_->mu);
    Kind& k = shared_->kinds[kind];
    for (;;) {
      if (k.held < max_per_kind_) break;
      for (size_t i = k.made.size(); i-- > 0;) {  // newest first
        if (std::shared_ptr<const std::string> newest = k.made[i].lock()) return newest;
      }
      // Every place is taken by a body still being made: wait for one.
      shared_->ready.wait(lock);
    }
    ++k.held;  // the place is this call's from here on
  }
  // A weak reference: the body's control block (and so this deleter) lives as long as the
  // shelf's weak_ptr to the body, so a strong one would keep `Shared` alive for ever. A body
  // that outlives the shelf has no place to give back.
  auto give_back = [weak = std::weak_ptr<Shared>(shared_), kind] {
    const std::shared_ptr<Shared> shared = weak.lock();
    if (!shared) return;
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      --shared->kinds[kind].held;
    }
    shared->ready.notify_all();
  };
  std::unique_ptr<std::string> made;
  try {
    made = std::make_unique<std::string>(make());
  } catch (...) {
    give_back();
    throw;
  }
  std::shared_ptr<const std::string> body(made.release(), [give_back](const std::string* b) {
    delete b;
    give_back();
  });
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    std::vector<std::weak_ptr<const std::string>>& made_of_kind = shared_->kinds[kind].made;
    std::erase_if(made_of_kind,
                  [](const std::weak_ptr<const std::string>& b) { return b.expired(); });
    made_of_kind.push_back(body);
    ++shared_->made;
  }
  shared_->ready.notify_all();
  return body;
}

uint64_t BodyShelf::made() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->made;
}

}  // namespace vmetrics::internal
