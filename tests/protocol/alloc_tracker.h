// SPDX-License-Identifier: Apache-2.0
// File: alloc_tracker.h
//
// Records the largest single heap allocation made through global operator new while a
// ScopedAllocTracker is alive, so tests can prove that a hostile length field (array32 header
// claiming 0xffffffff elements) never sizes an allocation. alloc_tracker.cc replaces the global
// operator new/delete of the test binary to do it.
//
// Thread safety: the counters are atomics; trackers must not nest.
#ifndef VMETRICS_TESTS_PROTOCOL_ALLOC_TRACKER_H_
#define VMETRICS_TESTS_PROTOCOL_ALLOC_TRACKER_H_

#include <cstddef>

namespace vmetrics::testing {

class ScopedAllocTracker {
 public:
  ScopedAllocTracker();
  ~ScopedAllocTracker();
  ScopedAllocTracker(const ScopedAllocTracker&) = delete;
  ScopedAllocTracker& operator=(const ScopedAllocTracker&) = delete;

  // The largest single allocation (bytes) since construction.
  size_t largest() const;
  // The number of allocations since construction.
  size_t count() const;
};

}  // namespace vmetrics::testing

#endif  // VMETRICS_TESTS_PROTOCOL_ALLOC_TRACKER_H_
