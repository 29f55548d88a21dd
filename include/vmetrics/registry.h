// File: registry.h
//
// The metrics registry: Prometheus families (counter, gauge, histogram) and their labelled
// children, kept in registration and creation order because that is the order vLLM's
// prometheus_client renders them in.
//
// Recording is lock-free: a child is a few atomics (counters and gauges hold doubles, as
// Python's do; histogram buckets are integer counts rendered as floats). Creating a child takes
// its family's mutex; rendering takes that mutex only long enough to copy the child list, then
// reads atomics, so a scrape never blocks recording of existing children. Label values are
// interned per registry: each distinct value is stored once, children hold views of it.
//
// Thread safety: every method may be called from any thread.
//
// Example:
//   Registry reg;
//   Family& f = reg.AddFamily({"vllm:prompt_tokens", MetricType::kCounter, "Prompt tokens.",
//                              {"model_name", "engine"}});
//   Child* c = f.GetOrCreate({"m", "0"});
//   c->Add(3);
//   EXPECT_EQ(c->value(), 3.0);
#ifndef VMETRICS_REGISTRY_H_
#define VMETRICS_REGISTRY_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/connector_catalog.h"  // MetricType

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vmetrics {

// Seconds since the Unix epoch for `_created` samples and info gauges. Injected so tests can
// pin it (prometheus_client's own tests use 123.456).
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double UnixSeconds() const = 0;
};
class SystemClock : public Clock {
 public:
  double UnixSeconds() const override;
};
class FixedClock : public Clock {
 public:
  explicit FixedClock(double t) : t_(t) {}
  double UnixSeconds() const override { return t_; }

 private:
  double t_;
};

struct FamilySpec {
  // Without `_total` for counters (a trailing `_total` is stripped, as Python does).
  std::string name;
  MetricType type = MetricType::kCounter;
  std::string help;
  std::vector<std::string> label_names;  // declaration order; rendering sorts them
  std::vector<double> buckets;           // histograms: ascending upper bounds, +Inf implied
  // Families render in (render_group, registration) order. vmetrics' own accounting families
  // use group 1 so they stay after every `vllm:` family, even ones registered later.
  int render_group = 0;
};

// One labelled series. Which methods apply depends on the family type; the others are no-ops.
//
// Layout: one allocation per child holding the atomics, the label values (views of strings
// interned once per registry, so a model name shared by a thousand children is stored once)
// and, for histograms, the bucket counters. A counter or gauge child with two labels is 64
// bytes; see bench/memory_bench.cc for what each kind costs with its share of the family's lists.
class Child {
 public:
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Counter: += v. Negative or NaN increments are refused (return false), like Python raises.
  bool Add(double v);
  // Gauge: = v.
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  // Histogram: one observation. NaN adds to the sum and falls in no bucket (prometheus_client).
  void Observe(double v);
  // Observe of each value in order, safe beside any other writer like Observe: the buckets are
  // counted locally and added once each, the sum is added to in the values' order and published
  // with one compare-and-swap, so the result is bit-identical to the Observe calls (with a
  // concurrent writer, as with Observe, the interleaving decides the order). For a list of
  // latencies per message (inter-token latencies: one per output).
  void ObserveMany(std::span<const double> values);

  // AddExclusive / ObserveExclusive
  //
  // Add and Observe for a writer that has this child to itself: a relaxed load and store
  // where Add and Observe use atomic read-modify-writes (lock-prefixed instructions, most of
  // the cost of an observation: bench/record_bench.cc). Same results, same refusals.
  //
  // REQUIRES: every write to this child is serialised by the caller — one thread, or one
  // mutex held around all of them — and none goes through Add/Observe at the same time (a
  // concurrent writer's update could be lost). Readers (rendering) need nothing: they may run
  // at any time and see each store whole.
  //
  // Example (a recorder that writes its children under its own mutex):
  //   std::lock_guard<std::mutex> lock(mu_);
  //   for (double d : transfer_durations) xfer_time->ObserveExclusive(d);
  bool AddExclusive(double v);
  void ObserveExclusive(double v);
  // ObserveExclusive of each value in order (the sum is added to in the same order, so it is
  // bit-identical), with the sum kept in a register between them. Same REQUIRES.
  void ObserveManyExclusive(std::span<const double> values);

  double value() const { return value_.load(std::memory_order_relaxed); }
  double created() const { return created_; }
  // The label values, in the family's label_names order. Valid as long as the registry.
  std::span<const std::string_view> label_values() const {
    return {reinterpret_cast<const std::string_view*>(this + 1), num_labels_};
  }
  // Histograms: non-cumulative count of bucket i (i == bounds: +Inf bucket).
  uint64_t bucket_count(size_t i) const { return buckets()[i].load(std::memory_order_relaxed); }
  double sum() const { return value_.load(std::memory_order_relaxed); }

 private:
  friend class Family;
  Child(const class Family* family, uint32_t num_labels, uint32_t num_buckets, double created)
      : family_(family), created_(created), num_labels_(num_labels), num_buckets_(num_buckets) {}
  ~Child() = default;
  // One allocation: the Child, then num_labels string_views, then num_buckets counters.
  static Child* Make(const class Family* family, std::span<const std::string_view> labels,
                     uint32_t num_buckets, double created);
  static void Destroy(Child* child);
  std::atomic<uint64_t>* buckets() const {
    return reinterpret_cast<std::atomic<uint64_t>*>(
        const_cast<std::string_view*>(reinterpret_cast<const std::string_view*>(this + 1)) +
        num_labels_);
  }

  const class Family* family_;
  double created_;
  std::atomic<double> value_{0.0};  // counter/gauge value, histogram sum
  uint32_t num_labels_;
  uint32_t num_buckets_;  // histogram only: bounds + 1
};
static_assert(alignof(Child) >= alignof(std::string_view) &&
                  sizeof(Child) % alignof(std::string_view) == 0,
              "the label views follow the Child in its allocation");

namespace internal {
// Label values interned once per registry (Family::GetOrCreate stores views of them).
class LabelPool;

// BucketIndexer
//
// A histogram family's bucket look-up: the index of the first bound >= v (bounds.size() for
// +Inf), -1 for NaN. When every bound is positive and normal and no binary octave holds more
// than four, it works from the value's exponent: a positive value of exponent e lies in
// [2^e, 2^(e+1)), so every bound of a lower exponent is below it and every bound of a higher one
// above, and only its octave's bounds are compared — two or four at once, without a branch on
// the value (exponents out of range clamp to an end of the table, a negative value counts as
// exponent 0, and the bounds after the octave, higher ones or the +Inf padding, compare false).
// vLLM's 1-2-5 and power-of-two buckets put at most two in one octave. Otherwise (linear or
// non-positive bounds) it counts every bound below v, two at a time.
class BucketIndexer {
 public:
  int operator()(double v) const {
    if (octave_first_ == nullptr) return CountBelow(v);
    if (v != v) return -1;  // NaN
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    int e = static_cast<int>((bits >> 52) & 0x7ff);
    e = (bits >> 63) != 0 ? 0 : e;
    e = std::clamp(e, octave_min_ - 1, octave_max_ + 1);
    const int first = octave_first_[e - octave_min_ + 1];
    const double* b = bounds_ + first;
#if defined(__SSE2__)
    const __m128d value = _mm_set1_pd(v);
    // Bit i of a mask is set where bound i is below v.
    const int low = _mm_movemask_pd(_mm_cmplt_pd(_mm_loadu_pd(b), value));
    int below = first + (low & 1) + (low >> 1);
    if (four_per_octave_) {
      const int high = _mm_movemask_pd(_mm_cmplt_pd(_mm_loadu_pd(b + 2), value));
      below += (high & 1) + (high >> 1);
    }
    return below;
#else
    int below = first + (b[0] < v) + (b[1] < v);
    if (four_per_octave_) below += (b[2] < v) + (b[3] < v);
    return below;
#endif
  }

  // CountMany
  //
  // Sets counts[i] (num_bounds + 1 of them) to how many of `values` fall in bucket i, NaN in
  // none — what indexing each value would count — adds each value to *sum in order, and returns
  // true; returns false, touching nothing, when the family has more bounds than it handles (up
  // to 23: every vLLM family). Each value is compared with every bound at once, two or four per
  // instruction, into running cumulative counts held in registers: no memory update per value,
  // so a list costs a few cycles per value however its values spread over the buckets.
  bool CountMany(std::span<const double> values, double* sum, uint64_t* counts) const;

 private:
  friend class vmetrics::Family;
  int CountBelow(double v) const;  // the plain count (registry.cc)

  const double* bounds_ = nullptr;          // with four +Inf after them in octave mode
  size_t num_bounds_ = 0;                   // counting mode
  const uint16_t* octave_first_ = nullptr;  // null: counting mode
  int octave_min_ = 0;
  int octave_max_ = 0;
  bool four_per_octave_ = false;  // else at most two
  // CountMany (src/metrics/cumulative_count.h): its kernel, null if the family has too many
  // bounds, and the bounds followed by +Inf padding.
  double (*count_many_)(const double* bounds, std::span<const double> values, double sum,
                        uint64_t* cumulative) = nullptr;
  const double* cumulative_bounds_ = nullptr;
  uint32_t bucket_bounds_ = 0;  // the family's number of bounds
};
}  // namespace internal

class Family {
 public:
  ~Family();
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const FamilySpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  MetricType type() const { return spec_.type; }

  // The child for these label values (in label_names order), created on first use.
  Child* GetOrCreate(std::span<const std::string_view> label_values);
  Child* GetOrCreate(std::span<const std::string> label_values);
  Child* GetOrCreate(std::initializer_list<std::string> label_values);
  // GetOrCreateBounded
  //
  // Like GetOrCreate, for label values that come from outside (the wire): an existing child is
  // returned as always, but a new one is created only while the family has fewer than
  // `max_children` children (all of them, eager ones included). Past the limit it returns
  // nullptr and registers nothing. The check and the creation happen under the family mutex.
  //
  // Example:
  //   f.GetOrCreate({"m", "0"});
  //   EXPECT_NE(f.GetOrCreateBounded(std::vector<std::string_view>{"m", "0"}, 1), nullptr);
  //   EXPECT_EQ(f.GetOrCreateBounded(std::vector<std::string_view>{"m", "1"}, 1), nullptr);
  Child* GetOrCreateBounded(std::span<const std::string_view> label_values, size_t max_children);
  // A copy of the child list, in creation order (cheap: pointers).
  std::vector<const Child*> Children() const;

  // Bucket index for v (first bound >= v), bounds().size() for +Inf; -1 for NaN.
  int BucketIndex(double v) const { return indexer_(v); }
  // The same look-up as a small value, for loops over many values: a copy kept in registers
  // rather than the family's members reloaded after every bucket update.
  const internal::BucketIndexer& bucket_indexer() const { return indexer_; }

 private:
  friend class Registry;
  Family(FamilySpec spec, const Clock* clock, internal::LabelPool* pool);
  void IndexOctaves();  // fills indexer_

  FamilySpec spec_;
  std::vector<double> bounds_;  // histograms: spec_.buckets, the hot copy Observe reads
  // When every bound is positive: octave_first_[e - octave_min_ + 1] is the number of bounds
  // whose binary exponent is below e (e from octave_min_ - 1 to octave_max_ + 1); the indexer
  // points into it and into octave_bounds_ (bounds_ followed by four +Inf). Empty otherwise.
  std::vector<uint16_t> octave_first_;
  std::vector<double> octave_bounds_;
  std::vector<double> cumulative_bounds_;  // BucketIndexer::CountMany's
  internal::BucketIndexer indexer_;
  const Clock* clock_;
  internal::LabelPool* pool_;
  mutable std::mutex mu_;
  std::vector<Child*> children_;  // creation order; owned, addresses stay stable
};

inline bool Child::Add(double v) {
  // prometheus_client raises on negative increments ("Counters can only be incremented by
  // non-negative amounts"); the caller reports it and the value is not applied.
  if (!(v >= 0)) return false;
  value_.fetch_add(v, std::memory_order_relaxed);
  return true;
}

inline bool Child::AddExclusive(double v) {
  if (!(v >= 0)) return false;
  value_.store(value_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  return true;
}

inline void Child::Observe(double v) {
  // prometheus_client adds every observation to the sum, then increments the first bucket
  // whose bound is >= v. NaN compares false with every bound, +Inf included, so it changes the
  // sum only and _count (the +Inf bucket) stays put.
  value_.fetch_add(v, std::memory_order_relaxed);
  const int i = family_->BucketIndex(v);
  if (i >= 0) buckets()[i].fetch_add(1, std::memory_order_relaxed);
}

inline void Child::ObserveMany(std::span<const double> values) {
  if (values.empty()) return;
  std::atomic<uint64_t>* const counts = buckets();
  const internal::BucketIndexer index = family_->bucket_indexer();
  uint64_t local[32];
  if (num_buckets_ <= std::size(local)) {
    // The sum is published below, after the counts, with one compare-and-swap.
    if (double unused = 0; !index.CountMany(values, &unused, local)) {
      std::fill_n(local, num_buckets_, 0u);
      for (const double v : values) {
        const int i = index(v);
        if (i >= 0) ++local[i];
      }
    }
    for (uint32_t b = 0; b < num_buckets_; ++b) {
      if (local[b] != 0) counts[b].fetch_add(local[b], std::memory_order_relaxed);
    }
  } else {
    for (const double v : values) {
      const int i = index(v);
      if (i >= 0) counts[i].fetch_add(1, std::memory_order_relaxed);
    }
  }
  double before = value_.load(std::memory_order_relaxed);
  double after;
  do {
    after = before;
    for (const double v : values) after += v;
  } while (!value_.compare_exchange_weak(before, after, std::memory_order_relaxed));
}

inline void Child::ObserveExclusive(double v) {
  value_.store(value_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  const int i = family_->BucketIndex(v);
  if (i >= 0) {
    std::atomic<uint64_t>& bucket = buckets()[i];
    bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

inline void Child::ObserveManyExclusive(std::span<const double> values) {
  double sum = value_.load(std::memory_order_relaxed);
  std::atomic<uint64_t>* const counts = buckets();
  const internal::BucketIndexer index = family_->bucket_indexer();
  // A list is counted at once (CountMany); a value or two is cheaper to index.
  uint64_t local[32];
  if (values.size() >= 3 && num_buckets_ <= std::size(local) &&
      index.CountMany(values, &sum, local)) {
    // Every bucket is stored, zeros too: a branch on which buckets a list reached mispredicted
    // more than the stores cost.
    for (uint32_t b = 0; b < num_buckets_; ++b) {
      counts[b].store(counts[b].load(std::memory_order_relaxed) + local[b],
                      std::memory_order_relaxed);
    }
    value_.store(sum, std::memory_order_relaxed);
    return;
  }
  for (const double v : values) {
    sum += v;
    const int i = index(v);
    if (i >= 0)
      counts[i].store(counts[i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  value_.store(sum, std::memory_order_relaxed);
}

class Registry {
 public:
  explicit Registry(const Clock* clock = nullptr);  // nullptr = SystemClock
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registers a family at the end of the render order and returns it. If a family with the
  // same name exists it is returned unchanged (its spec must match; callers check).
  Family& AddFamily(FamilySpec spec);
  Family* Find(std::string_view name);
  // Families in render order: by render_group, then registration order.
  std::vector<const Family*> Families() const;
  const Clock& clock() const { return *clock_; }

 private:
  SystemClock system_clock_;
  const Clock* clock_;
  std::unique_ptr<internal::LabelPool> pool_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;  // registration order
  std::vector<const Family*> order_;
};

}  // namespace vmetrics

#endif  // VMETRICS_REGISTRY_H_
