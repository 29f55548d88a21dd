// File: registry.h
//
// The metrics registry: Prometheus families (counter, gauge, histogram) and their labelled
// children, kept in registration and creation order because that is the order vLLM's
// prometheus_client renders them in.
//
// Recording is lock-free: a child is a few atomics (counters and gauges hold doubles, as
// Python's do; histogram buckets are integer counts rendered as floats). Creating a child takes
// its family's mutex; rendering takes that mutex only long enough to copy the child list, then
// reads atomics, so a scrape never blocks recording of existing children.
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

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/connector_catalog.h"  // MetricType

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
  std::string name;  // without `_total` for counters (a trailing `_total` is stripped, as Python does)
  MetricType type = MetricType::kCounter;
  std::string help;
  std::vector<std::string> label_names;  // declaration order; rendering sorts them
  std::vector<double> buckets;           // histograms: ascending upper bounds, +Inf implied
  // Families render in (render_group, registration) order. vmetrics' own accounting families
  // use group 1 so they stay after every `vllm:` family, even ones registered later.
  int render_group = 0;
};

// One labelled series. Which methods apply depends on the family type; the others are no-ops.
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

  double value() const { return value_.load(std::memory_order_relaxed); }
  double created() const { return created_; }
  const std::vector<std::string>& label_values() const { return label_values_; }
  // Histograms: non-cumulative count of bucket i (i == bounds: +Inf bucket).
  uint64_t bucket_count(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }
  double sum() const { return value_.load(std::memory_order_relaxed); }

 private:
  friend class Family;
  Child(const class Family* family, std::vector<std::string> label_values, double created);

  const class Family* family_;
  std::vector<std::string> label_values_;
  double created_;
  std::atomic<double> value_{0.0};                  // counter/gauge value, histogram sum
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // histogram only: bounds+1 counters
};

class Family {
 public:
  const FamilySpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  MetricType type() const { return spec_.type; }

  // The child for these label values (in label_names order), created on first use.
  Child* GetOrCreate(std::span<const std::string> label_values);
  Child* GetOrCreate(std::initializer_list<std::string> label_values);
  // A copy of the child list, in creation order (cheap: pointers).
  std::vector<const Child*> Children() const;

  // Bucket index for v (first bound >= v), bounds().size() for +Inf; -1 for NaN.
  int BucketIndex(double v) const;

 private:
  friend class Registry;
  Family(FamilySpec spec, const Clock* clock);

  FamilySpec spec_;
  const Clock* clock_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Child>> children_;  // creation order; addresses stay stable
  std::vector<const Child*> order_;
};

class Registry {
 public:
  explicit Registry(const Clock* clock = nullptr);  // nullptr = SystemClock
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
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;  // registration order
  std::vector<const Family*> order_;
};

}  // namespace vmetrics

#endif  // VMETRICS_REGISTRY_H_
