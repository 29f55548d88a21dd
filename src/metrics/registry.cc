#include "vmetrics/registry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_set>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "metrics/cumulative_count.h"

namespace vmetrics {

static_assert(internal::kMaxCumulativeBounds <= 32, "Child::ObserveMany's local counts");

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
  Child* child =
      new (memory) Child(family, static_cast<uint32_t>(labels.size()), num_buckets, created);
  auto* views = reinterpret_cast<std::string_view*>(child + 1);
  for (size_t i = 0; i < labels.size(); ++i) new (views + i) std::string_view(labels[i]);
  auto* counts = reinterpret_cast<std::atomic<uint64_t>*>(views + labels.size());
  for (uint32_t i = 0; i < num_buckets; ++i) new (counts + i) std::atomic<uint64_t>(0);
  return child;
}

void Child::Destroy(Child* child) {
  // string_view and atomic<uint64_t> are trivially destructible.
  child->~Child();
  ::operator delete(child);
}

Family::Family(FamilySpec spec, const Clock* clock, internal::LabelPool* pool)
    : spec_(std::move(spec)), clock_(clock), pool_(pool) {
  // Python strips one trailing "_total" from counter names and adds it back on the samples.
  constexpr std::string_view kTotal = "_total";
  if (spec_.type == MetricType::kCounter && spec_.name.size() > kTotal.size() &&
      spec_.name.compare(spec_.name.size() - kTotal.size(), kTotal.size(), kTotal) == 0) {
    spec_.name.resize(spec_.name.size() - kTotal.size());
  }
  if (spec_.type == MetricType::kHistogram) bounds_ = spec_.buckets;
  IndexOctaves();
}

namespace {
// The biased binary exponent of a double (0 for zero and subnormals, 2047 for inf and NaN).
int Exponent(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return static_cast<int>((bits >> 52) & 0x7ff);
}
}  // namespace

void Family::IndexOctaves() {
  // CountMany: the bounds, then +Inf up to a whole group of the kernel's.
  constexpr size_t kGroup = internal::kCumulativeBoundsMultiple;
  const size_t padded = (bounds_.size() + 1 + kGroup - 1) / kGroup * kGroup;
  if (!bounds_.empty() && padded <= internal::kMaxCumulativeBounds) {
    cumulative_bounds_ = bounds_;
    cumulative_bounds_.resize(padded, std::numeric_limits<double>::infinity());
    indexer_.cumulative_bounds_ = cumulative_bounds_.data();
    indexer_.bucket_bounds_ = static_cast<uint32_t>(bounds_.size());
    indexer_.count_many_ = internal::CumulativeCounterFor(padded, internal::BestCountIsa());
  }
  // Bounds are ascending and finite (ValidateRow, FamilySpec); the index needs them positive and
  // normal, and stays small (vLLM's widest, 1e-3 s to hours or 1 to 2^31 bytes, span ~40).
  indexer_.bounds_ = bounds_.data();  // counting mode unless the octaves are indexed below
  indexer_.num_bounds_ = bounds_.size();
  if (bounds_.empty() || !(bounds_.front() >= std::numeric_limits<double>::min()) ||
      bounds_.size() >= UINT16_MAX) {
    return;
  }
  const int min = Exponent(bounds_.front());
  const int max = Exponent(bounds_.back());
  if (max - min > 256) return;
  std::vector<uint16_t> first;
  int span = 0;
  for (int e = min - 1; e <= max + 1; ++e) {
    uint16_t below = 0;
    while (below < bounds_.size() && Exponent(bounds_[below]) < e) ++below;
    first.push_back(below);
    int in_octave = 0;
    for (size_t i = below; i < bounds_.size() && Exponent(bounds_[i]) == e; ++i) ++in_octave;
    span = std::max(span, in_octave);
  }
  if (span > 4) return;  // linear buckets: the plain count is as fast
  octave_first_ = std::move(first);
  octave_bounds_ = bounds_;
  octave_bounds_.insert(octave_bounds_.end(), 4, std::numeric_limits<double>::infinity());
  indexer_.bounds_ = octave_bounds_.data();
  indexer_.octave_first_ = octave_first_.data();
  indexer_.octave_min_ = min;
  indexer_.octave_max_ = max;
  indexer_.four_per_octave_ = span > 2;
}

Family::~Family() {
  for (Child* c : children_) Child::Destroy(c);
}

int internal::BucketIndexer::CountBelow(double v) const {
  if (v != v) return -1;  // NaN
  // For sorted bounds the first bound >= v is the number of bounds below v. Counting them all
  // avoids the branches of a binary search, which latencies spread over the buckets defeat;
  // two at a time with SSE2 it takes about 4 ns for NIXL's 12 bounds where std::lower_bound
  // takes 18 (bench/README.md).
  const double* b = bounds_;
  const size_t n = num_bounds_;
  size_t i = 0;
  int below = 0;
#if defined(__SSE2__)
  const __m128d value = _mm_set1_pd(v);
  __m128i count = _mm_setzero_si128();
  for (; i + 2 <= n; i += 2) {
    // Each lane of the comparison is all ones (-1) where the bound is below v.
    count = _mm_sub_epi64(count, _mm_castpd_si128(_mm_cmplt_pd(_mm_loadu_pd(b + i), value)));
  }
  below = static_cast<int>(_mm_cvtsi128_si64(count) +
                           _mm_cvtsi128_si64(_mm_unpackhi_epi64(count, count)));
#endif
  for (; i < n; ++i) below += b[i] < v;
  return below;
}

bool internal::BucketIndexer::CountMany(std::span<const double> values, double* sum,
                                        uint64_t* counts) const {
  if (count_many_ == nullptr) return false;
  uint64_t cumulative[kMaxCumulativeBounds];
  *sum = count_many_(cumulative_bounds_, values, *sum, cumulative);
  // Bucket i holds the values <= bound i that are not <= bound i - 1; bound num_bounds is +Inf.
  uint64_t before = 0;
  for (uint32_t i = 0; i <= bucket_bounds_; ++i) {
    counts[i] = cumulative[i] - before;
    before = cumulative[i];
  }
  return true;
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
  const uint32_t buckets =
      spec_.type == MetricType::kHistogram ? static_cast<uint32_t>(bounds_.size() + 1) : 0;
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
