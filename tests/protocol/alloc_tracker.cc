// SPDX-License-Identifier: Apache-2.0
// Replaces the global operator new/delete of protocol_test so ScopedAllocTracker can see the
// size of every allocation. Only the plain and array forms are replaced; libstdc++ routes the
// nothrow forms through them, and the aligned forms are not used by the decoder.
#include "alloc_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest{0};
std::atomic<size_t> g_count{0};

void* Allocate(std::size_t size) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    size_t prev = g_largest.load(std::memory_order_relaxed);
    while (size > prev && !g_largest.compare_exchange_weak(prev, size)) {
    }
  }
  if (size == 0) size = 1;
  void* p = std::malloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return Allocate(size); }
void* operator new[](std::size_t size) { return Allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace vmetrics::testing {

ScopedAllocTracker::ScopedAllocTracker() {
  g_largest.store(0);
  g_count.store(0);
  g_tracking.store(true);
}
ScopedAllocTracker::~ScopedAllocTracker() { g_tracking.store(false); }
size_t ScopedAllocTracker::largest() const { return g_largest.load(); }
size_t ScopedAllocTracker::count() const { return g_count.load(); }

}  // namespace vmetrics::testing

#if defined(__SANITIZE_ADDRESS__)
// Under ASan an allocation of many GB (a reserve() sized by a hostile or uninitialized count)
// aborts the whole binary. Returning null instead makes Allocate() throw std::bad_alloc, which
// the tests report against the input that caused it, as in a build without ASan.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
