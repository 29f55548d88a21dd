// SPDX-License-Identifier: Apache-2.0
// File: body_shelf.h (internal to src/server)
//
// BodyShelf: bounds how many rendered /metrics bodies the HTTP server holds at once.
//
// Why: a reply's body lives until the client has read it. Each scrape rendered its own body,
// so clients that asked for a large exposition and read it slowly (or never, until the reply
// deadline) each held a full copy of it: 8 such clients, 8 copies, and more clients, more
// copies. So the bodies of one kind (format and encoding) are counted from the render until
// the last reply holding them is gone; while `max_per_kind` of them are held, a scrape gets the
// newest of them instead of a new render (shared, not copied). So the server holds at most
// max_per_kind bodies of each of the four kinds, whatever the number of clients; the cost is
// that, while that many replies are being read, a scrape may get a body rendered up to one
// reply deadline ago (request_timeout_s) rather than a fresh one. When every counted body is
// still being rendered, the scrape waits for the first to be ready.
//
// Thread safety: Get may be called from any number of threads. A body may outlive the shelf.
#ifndef VMETRICS_SERVER_BODY_SHELF_H_
#define VMETRICS_SERVER_BODY_SHELF_H_

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vmetrics::internal {

class BodyShelf {
 public:
  static constexpr size_t kKinds = 4;  // text or OpenMetrics, identity or gzip

  // `max_per_kind` >= 1.
  explicit BodyShelf(size_t max_per_kind);

  // Get
  //
  // A body of `kind` (< kKinds): made by `make` when fewer than max_per_kind bodies of that
  // kind are held, else the newest one held. An exception from `make` propagates (and frees
  // its place).
  //
  // Example:
  //   BodyShelf shelf(4);
  //   std::shared_ptr<const std::string> body = shelf.Get(0, [] { return Render(); });
  std::shared_ptr<const std::string> Get(size_t kind, const std::function<std::string()>& make);

  // Bodies made so far (all kinds); for tests.
  uint64_t made() const;

 private:
  struct Kind {
    size_t held = 0;  // made or being made, not yet freed
    // The bodies made, oldest first; the expired ones are dropped as new ones come.
    std::vector<std::weak_ptr<const std::string>> made;
  };
  struct Shared {
    std::mutex mu;
    std::condition_variable ready;  // a body was made (or its making failed)
    std::array<Kind, kKinds> kinds;
    uint64_t made = 0;
  };

  const size_t max_per_kind_;
  // Shared with every body's deleter, which gives its place back.
  const std::shared_ptr<Shared> shared_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_SERVER_BODY_SHELF_H_
