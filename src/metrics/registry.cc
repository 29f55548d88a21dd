// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/registry.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <new>
#include <unordered_set>

#include "cumulative_count.h"

namespace vmetrics {

static_assert(internal::kMaxCumulativeBounds <= 32, "Histogram::ObserveMany's local counts");

namespace internal {

// Every distinct label value a registry has seen, stored once. Children keep string_views of
// these strings: a node-based set never moves its elements, and nothing is ever erased, so the
// views stay valid for the registry's lifetime. The model name and the engine indexes repeat
// in every family; interning them is most of what keeps a child near 64 bytes.
class LabelPool {
 public:
  std::string_view Intern(std::string_view value) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find(value);
    if (it == values_.end()) it = values_.emplace(value).first;
    return *it;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  std::mutex mu_;
  std::unordered_set<std::string, Hash, std::equal_to<>> values_;
};

}  // namespace internal

double SystemClock::UnixSeconds() const {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Child* Child::Make(const Family* family, std::span<const std::string_view> labels,
                   uint32_t num_buckets, double created) {
  const size_t bytes = sizeof(Child) + labels.size() * sizeof(std::string_view) +
                       num_buckets * sizeof(std::atomic<uint64_t>);
  void* memory = ::operator new(bytes);
  const auto num_labels = static_cast<uint32_t>(labels.size());
  Child* child = nullptr;
  switch (family->type()) {
    case MetricType::kCounter:
      child = new (memory) Counter(family, num_labels, num_buckets, created);
      break;
    case MetricType::kGauge:
      child = new (memory) Gauge(family, num_labels, num_buckets, created);
      break;
    case MetricType::kHistogram:
      child = new (memory) Histogram(family, num_labels, num_buckets, created);
      break;
    case MetricType::kSummary:
      child = new (memory) Summary(family, num_labels, num_buckets, created);
      break;
  }
  auto* views = reinterpret_cast<std::string_view*>(child + 1);
  for (size_t i = 0; i < labels.size(); ++i) new (views + i) std::string_view(labels[i]);
  auto* counts = reinterpret_cast<std::atomic<uint64_t>*>(views + labels.size());
  for (uint32_t i = 0; i < num_buckets; ++i) new (counts + i) std::atomic<uint64_t>(0);
  return child;
}

void Child::Destroy(Child* child) {
  // The typed series add nothing to the Child; string_view and atomic<uint64_t> are trivially
  // destructible.
  child->~Child();
  ::operator delete(child);
}

namespace {
// Python strips one trailing "_total" from counter names and adds it back on the samples.
FamilySpec Normalised(FamilySpec spec) {
  spec.name.resize(FamilyName(spec.name, spec.type).size());
  return spec;
}
}  // namespace

Family::Family(FamilySpec spec, const Clock* clock, internal::LabelPool* pool)
    : spec_(Normalised(std::move(spec))),
      index_(spec_.type == MetricType::kHistogram ? spec_.buckets : std::vector<double>()),
      clock_(clock),
      pool_(pool) {}

Family::~Family() {
  for (Child* c : children_) Child::Destroy(c);
}

Child* Family::GetOrCreate(std::span<const std::string_view> label_values) {
  return GetOrCreateBounded(label_values, SIZE_MAX);
}

Child* Family::GetOrCreateBounded(std::span<const std::string_view> label_values,
                                  size_t max_children) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Child* c : children_) {
    const std::span<const std::string_view> have = c->label_values();
    if (std::equal(have.begin(), have.end(), label_values.begin(), label_values.end())) return c;
  }
  if (children_.size() >= max_children) return nullptr;
  // Interned before the child exists, so its views never point at the caller's strings.
  std::vector<std::string_view> interned;
  interned.reserve(label_values.size());
  for (std::string_view v : label_values) interned.push_back(pool_->Intern(v));
  // A summary keeps its count where a histogram keeps its buckets, as one counter.
  uint32_t buckets = 0;
  if (spec_.type == MetricType::kHistogram) {
    buckets = static_cast<uint32_t>(index_.num_bounds() + 1);
  } else if (spec_.type == MetricType::kSummary) {
    buckets = 1;
  }
  children_.push_back(Child::Make(this, interned, buckets, clock_->UnixSeconds()));
  return children_.back();
}

Child* Family::GetOrCreate(std::span<const std::string> label_values) {
  std::vector<std::string_view> views(label_values.begin(), label_values.end());
  return GetOrCreate(std::span<const std::string_view>(views));
}

Child* Family::GetOrCreate(std::initializer_list<std::string> label_values) {
  return GetOrCreate(std::span<const std::string>(label_values.begin(), label_values.size()));
}

std::vector<const Child*> Family::Children() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<const Child*>(children_.begin(), children_.end());
}

Registry::Registry(const Clock* clock)
    : clock_(clock != nullptr ? clock : &system_clock_),
      pool_(std::make_unique<internal::LabelPool>()) {}

Registry::~Registry() = default;

std::unique_ptr<Family> Registry::MakeFamily(FamilySpec spec) {
  return std::unique_ptr<Family>(new Family(std::move(spec), clock_, pool_.get()));
}

Family& Registry::ReplaceFamily(const Family& placeholder, std::unique_ptr<Family> family) {
  std::lock_guard<std::mutex> lock(mu_);
  Family* replacement = family.get();
  // The placeholder keeps its place in families_ (it stays alive) but loses its name: Find
  // and AddFamily look up by name through the replacement, which goes before it.
  auto owner =
      std::find_if(families_.begin(), families_.end(),
                   [&](const std::unique_ptr<Family>& f) { return f.get() == &placeholder; });
  families_.insert(owner, std::move(family));
  std::replace(order_.begin(), order_.end(), static_cast<const Family*>(&placeholder),
               static_cast<const Family*>(replacement));
  return *replacement;
}

Family& Registry::AddFamily(FamilySpec spec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto family = std::unique_ptr<Family>(new Family(std::move(spec), clock_, pool_.get()));
  for (const auto& f : families_) {
    if (f->name() == family->name()) return *f;
  }
  families_.push_back(std::move(family));
  const Family* added = families_.back().get();
  auto pos =
      std::upper_bound(order_.begin(), order_.end(), added, [](const Family* a, const Family* b) {
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
