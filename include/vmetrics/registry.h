// SPDX-License-Identifier: Apache-2.0
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
//   CounterFamily f(&reg.AddFamily({"vllm:prompt_tokens", MetricType::kCounter,
//                                   "Prompt tokens.", {"model_name", "engine"}}));
//   Counter* c = f.GetOrCreate({"m", "0"});
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

#include "vmetrics/internal/bucket_indexer.h"
#include "vmetrics/metric_type.h"

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

// Child
//
// One labelled series, as rendering reads it: its value (a histogram's sum), its bucket counts,
// its label values and its `_created` time. Recording goes through the typed series below
// (Counter, Gauge, Histogram): a child is created as the type of its family, so a method that
// does not apply to a family's type does not compile, instead of silently doing nothing.
//
// Layout: one allocation per child holding the atomics, the label values (views of strings
// interned once per registry, so a model name shared by a thousand children is stored once)
// and, for histograms, the bucket counters. A counter or gauge child with two labels is 64
// bytes; see bench/memory_bench.cc for what each kind costs with its share of the family's lists.
class Child {
 public:
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  MetricType type() const;  // its family's
  double value() const { return value_.load(std::memory_order_relaxed); }
  double created() const { return created_; }
  // The label values, in the family's label_names order. Valid as long as the registry.
  std::span<const std::string_view> label_values() const {
    return {reinterpret_cast<const std::string_view*>(this + 1), num_labels_};
  }
  // Histograms: non-cumulative count of bucket i (i == bounds: +Inf bucket).
  uint64_t bucket_count(size_t i) const { return buckets()[i].load(std::memory_order_relaxed); }
  double sum() const { return value_.load(std::memory_order_relaxed); }

  // As
  //
  // This child as the series of its type (T is Counter, Gauge or Histogram), or nullptr when
  // its family is of another type. For code that learns the type at run time (connector rows,
  // tests); declared families get typed handles directly (TypedFamily).
  //
  // Example:
  //   Counter* c = family.GetOrCreate({"m", "0"})->As<Counter>();
  template <typename T>
  T* As() {
    return type() == T::kType ? static_cast<T*>(this) : nullptr;
  }
  template <typename T>
  const T* As() const {
    return type() == T::kType ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  Child(const class Family* family, uint32_t num_labels, uint32_t num_buckets, double created)
      : family_(family), created_(created), num_labels_(num_labels), num_buckets_(num_buckets) {}
  ~Child() = default;
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

 private:
  friend class Family;
  // One allocation: the series (a Counter, Gauge or Histogram, by the family's type), then
  // num_labels string_views, then num_buckets counters.
  static Child* Make(const class Family* family, std::span<const std::string_view> labels,
                     uint32_t num_buckets, double created);
  static void Destroy(Child* child);
};
static_assert(alignof(Child) >= alignof(std::string_view) &&
                  sizeof(Child) % alignof(std::string_view) == 0,
              "the label views follow the Child in its allocation");

// Counter: a monotonically increasing series (its value is a double, as Python's is).
class Counter final : public Child {
 public:
  static constexpr MetricType kType = MetricType::kCounter;

  // += v. Negative or NaN increments are refused (return false), like Python raises.
  bool Add(double v);
  // Add for a writer that has this child to itself: a relaxed load and store where Add uses an
  // atomic read-modify-write (a lock-prefixed instruction, most of the cost of an update:
  // bench/record_bench.cc). Same result, same refusals.
  //
  // REQUIRES: every write to this child is serialised by the caller — one thread, or one
  // mutex held around all of them — and none goes through Add at the same time (a concurrent
  // writer's update could be lost). Readers (rendering) need nothing: they may run at any time
  // and see each store whole.
  bool AddExclusive(double v);

 private:
  friend class Child;
  using Child::Child;
};

// Gauge: a series set to its latest value.
class Gauge final : public Child {
 public:
  static constexpr MetricType kType = MetricType::kGauge;

  void Set(double v) { value_.store(v, std::memory_order_relaxed); }

 private:
  friend class Child;
  using Child::Child;
};

// Histogram: observations counted into the family's buckets, their sum kept.
class Histogram final : public Child {
 public:
  static constexpr MetricType kType = MetricType::kHistogram;

  // One observation. NaN adds to the sum and falls in no bucket (prometheus_client).
  void Observe(double v);
  // Observe of each value in order, safe beside any other writer like Observe: the buckets are
  // counted locally and added once each, the sum is added to in the values' order and published
  // with one compare-and-swap, so the result is bit-identical to the Observe calls (with a
  // concurrent writer, as with Observe, the interleaving decides the order). For a list of
  // latencies per message (inter-token latencies: one per output).
  void ObserveMany(std::span<const double> values);

  // ObserveExclusive / ObserveManyExclusive
  //
  // Observe and ObserveMany for a writer that has this child to itself (the REQUIRES of
  // Counter::AddExclusive): same results, without atomic read-modify-writes. ObserveMany's
  // version keeps the sum in a register between the values.
  //
  // Example (a recorder that writes its children under its own mutex):
  //   std::lock_guard<std::mutex> lock(mu_);
  //   xfer_time->ObserveManyExclusive(transfer_durations);
  void ObserveExclusive(double v);
  void ObserveManyExclusive(std::span<const double> values);

 private:
  friend class Child;
  using Child::Child;
};

// Summary: a prometheus_client Summary without quantiles: the number of observations and
// their sum (Child::sum). prometheus-fastapi-instrumentator's request and response size
// families are of this kind.
class Summary final : public Child {
 public:
  static constexpr MetricType kType = MetricType::kSummary;

  // One observation: the count goes up by one and `v` is added to the sum, NaN included
  // (prometheus_client's Summary.observe checks nothing).
  void Observe(double v) {
    value_.fetch_add(v, std::memory_order_relaxed);
    buckets()[0].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t count() const { return bucket_count(0); }

 private:
  friend class Child;
  using Child::Child;
};

static_assert(sizeof(Counter) == sizeof(Child) && sizeof(Gauge) == sizeof(Child) &&
                  sizeof(Histogram) == sizeof(Child) && sizeof(Summary) == sizeof(Child),
              "a typed series is its Child: the label views follow it in one allocation");

namespace internal {
// Label values interned once per registry (Family::GetOrCreate stores views of them).
class LabelPool;
}  // namespace internal

class Family {
 public:
  ~Family();
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const FamilySpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  MetricType type() const { return spec_.type; }

  // The child for these label values (in label_names order), created on first use, as the
  // series of the family's type (Child::As, or a TypedFamily, records into it).
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

  // Bucket index for v (first bound >= v), the number of bounds for +Inf; -1 for NaN.
  int BucketIndex(double v) const { return index_.indexer()(v); }
  // The same look-up as a small value, for loops over many values: a copy kept in registers
  // rather than the family's members reloaded after every bucket update.
  const internal::BucketIndexer& bucket_indexer() const { return index_.indexer(); }

 private:
  friend class Registry;
  Family(FamilySpec spec, const Clock* clock, internal::LabelPool* pool);

  FamilySpec spec_;
  internal::BucketIndex index_;  // histograms: spec_.buckets, the tables Observe reads
  const Clock* clock_;
  internal::LabelPool* pool_;
  mutable std::mutex mu_;
  std::vector<Child*> children_;  // creation order; owned, addresses stay stable
};

// TypedFamily
//
// A family of T's (Counter, Gauge or Histogram), whose children come out as T: what the
// declared families hand out (recorder.cc), so recording into them is checked by the compiler.
// A small value (one pointer); copy freely.
//
// Example:
//   GaugeFamily running(&registry.AddFamily({"vllm:num_requests_running", MetricType::kGauge,
//                                            "Running.", {"model_name", "engine"}}));
//   running.GetOrCreate({"m", "0"})->Set(3);
template <typename T>
class TypedFamily {
 public:
  TypedFamily() = default;
  // REQUIRES: family->type() == T::kType.
  explicit TypedFamily(Family* family) : family_(family) {}

  T* GetOrCreate(std::span<const std::string_view> label_values) const {
    return static_cast<T*>(family_->GetOrCreate(label_values));
  }
  T* GetOrCreate(std::initializer_list<std::string> label_values) const {
    return static_cast<T*>(family_->GetOrCreate(label_values));
  }
  // Family::GetOrCreateBounded: nullptr past `max_children`.
  T* GetOrCreateBounded(std::span<const std::string_view> label_values, size_t max_children) const {
    return static_cast<T*>(family_->GetOrCreateBounded(label_values, max_children));
  }
  Family& family() const { return *family_; }
  explicit operator bool() const { return family_ != nullptr; }

 private:
  Family* family_ = nullptr;
};
using CounterFamily = TypedFamily<Counter>;
using GaugeFamily = TypedFamily<Gauge>;
using HistogramFamily = TypedFamily<Histogram>;
using SummaryFamily = TypedFamily<Summary>;

inline MetricType Child::type() const { return family_->type(); }

inline bool Counter::Add(double v) {
  // prometheus_client raises on negative increments ("Counters can only be incremented by
  // non-negative amounts"); the caller reports it and the value is not applied.
  if (!(v >= 0)) return false;
  value_.fetch_add(v, std::memory_order_relaxed);
  return true;
}

inline bool Counter::AddExclusive(double v) {
  if (!(v >= 0)) return false;
  value_.store(value_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  return true;
}

inline void Histogram::Observe(double v) {
  // prometheus_client adds every observation to the sum, then increments the first bucket
  // whose bound is >= v. NaN compares false with every bound, +Inf included, so it changes the
  // sum only and _count (the +Inf bucket) stays put.
  value_.fetch_add(v, std::memory_order_relaxed);
  const int i = family_->BucketIndex(v);
  if (i >= 0) buckets()[i].fetch_add(1, std::memory_order_relaxed);
}

inline void Histogram::ObserveMany(std::span<const double> values) {
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

inline void Histogram::ObserveExclusive(double v) {
  value_.store(value_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  const int i = family_->BucketIndex(v);
  if (i >= 0) {
    std::atomic<uint64_t>& bucket = buckets()[i];
    bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
}

inline void Histogram::ObserveManyExclusive(std::span<const double> values) {
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

  // MakeFamily / ReplaceFamily
  //
  // For a family whose place in the render order comes before its label names are known
  // (vllm:cache_config_info: registered at start-up, labelled with the CacheConfig keys of the
  // engines' ready responses): a placeholder is registered with AddFamily, and the real family
  // is made with MakeFamily (not registered, not rendered), given its children, and put in the
  // placeholder's place by ReplaceFamily. A render sees the one or the other, complete; the
  // placeholder stays alive (a render that copied the family list may still read it) but is
  // neither rendered nor found again. REQUIRES: `family` has the placeholder's name and render
  // group, and came from this registry's MakeFamily.
  //
  // Example:
  //   Family& info = reg.AddFamily({"x_info", MetricType::kGauge, "X.", {}});
  //   std::unique_ptr<Family> real = reg.MakeFamily({"x_info", MetricType::kGauge, "X.", {"k"}});
  //   real->GetOrCreate({"v"})->As<Gauge>()->Set(1);
  //   reg.ReplaceFamily(info, std::move(real));
  std::unique_ptr<Family> MakeFamily(FamilySpec spec);
  Family& ReplaceFamily(const Family& placeholder, std::unique_ptr<Family> family);

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
