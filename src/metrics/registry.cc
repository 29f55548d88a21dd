#include "vmetrics/registry.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace vmetrics {

double SystemClock::UnixSeconds() const {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Child::Child(const Family* family, std::vector<std::string> label_values, double created)
    : family_(family), label_values_(std::move(label_values)), created_(created) {
  if (family_->type() == MetricType::kHistogram) {
    const size_t n = family_->spec().buckets.size() + 1;
    buckets_ = std::make_unique<std::atomic<uint64_t>[]>(n);
    for (size_t i = 0; i < n; ++i) buckets_[i].store(0, std::memory_order_relaxed);
  }
}

bool Child::Add(double v) {
  // prometheus_client raises on negative increments ("Counters can only be incremented by
  // non-negative amounts"); the caller reports it and the value is not applied.
  if (!(v >= 0)) return false;
  value_.fetch_add(v, std::memory_order_relaxed);
  return true;
}

void Child::Observe(double v) {
  // prometheus_client adds every observation to the sum, then increments the first bucket whose
  // bound is >= v. NaN compares false with every bound, +Inf included, so it changes the sum
  // only and _count (the +Inf bucket) stays put.
  value_.fetch_add(v, std::memory_order_relaxed);
  const int i = family_->BucketIndex(v);
  if (i >= 0) buckets_[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
}

Family::Family(FamilySpec spec, const Clock* clock) : spec_(std::move(spec)), clock_(clock) {
  // Python strips one trailing "_total" from counter names and adds it back on the samples.
  constexpr std::string_view kTotal = "_total";
  if (spec_.type == MetricType::kCounter && spec_.name.size() > kTotal.size() &&
      spec_.name.compare(spec_.name.size() - kTotal.size(), kTotal.size(), kTotal) == 0) {
    spec_.name.resize(spec_.name.size() - kTotal.size());
  }
}

int Family::BucketIndex(double v) const {
  if (std::isnan(v)) return -1;
  const auto& b = spec_.buckets;
  return static_cast<int>(std::lower_bound(b.begin(), b.end(), v) - b.begin());
}

Child* Family::GetOrCreate(std::span<const std::string> label_values) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : children_) {
    if (std::equal(c->label_values_.begin(), c->label_values_.end(), label_values.begin(),
                   label_values.end())) {
      return c.get();
    }
  }
  children_.push_back(std::unique_ptr<Child>(new Child(
      this, std::vector<std::string>(label_values.begin(), label_values.end()),
      clock_->UnixSeconds())));
  order_.push_back(children_.back().get());
  return children_.back().get();
}

Child* Family::GetOrCreate(std::initializer_list<std::string> label_values) {
  return GetOrCreate(std::span<const std::string>(label_values.begin(), label_values.size()));
}

std::vector<const Child*> Family::Children() const {
  std::lock_guard<std::mutex> lock(mu_);
  return order_;
}

Registry::Registry(const Clock* clock) : clock_(clock != nullptr ? clock : &system_clock_) {}

Family& Registry::AddFamily(FamilySpec spec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto family = std::unique_ptr<Family>(new Family(std::move(spec), clock_));
  for (const auto& f : families_) {
    if (f->name() == family->name()) return *f;
  }
  families_.push_back(std::move(family));
  const Family* added = families_.back().get();
  auto pos = std::upper_bound(order_.begin(), order_.end(), added, [](const Family* a, const Family* b) {
    return a->spec().render_group < b->spec().render_group;
  });
  order_.insert(pos, added);
  return *families_.back();
}

Family* Registry::Find(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

std::vector<const Family*> Registry::Families() const {
  std::lock_guard<std::mutex> lock(mu_);
  return order_;
}

}  // namespace vmetrics
