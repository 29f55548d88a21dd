// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/internal/bucket_indexer.h"

#include <limits>
#include <utility>

#include "cumulative_count.h"

namespace vmetrics::internal {
namespace {

// The biased binary exponent of a double (0 for zero and subnormals, 2047 for inf and NaN).
int Exponent(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return static_cast<int>((bits >> 52) & 0x7ff);
}

}  // namespace

BucketIndex::BucketIndex(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  // CountMany: the bounds, then +Inf up to a whole group of the kernel's.
  constexpr size_t kGroup = kCumulativeBoundsMultiple;
  const size_t padded = (bounds_.size() + 1 + kGroup - 1) / kGroup * kGroup;
  if (!bounds_.empty() && padded <= kMaxCumulativeBounds) {
    cumulative_bounds_ = bounds_;
    cumulative_bounds_.resize(padded, std::numeric_limits<double>::infinity());
    indexer_.cumulative_bounds_ = cumulative_bounds_.data();
    indexer_.bucket_bounds_ = static_cast<uint32_t>(bounds_.size());
    indexer_.count_many_ = CumulativeCounterFor(padded, BestCountIsa());
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

int BucketIndexer::CountBelow(double v) const {
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

bool BucketIndexer::CountMany(std::span<const double> values, double* sum, uint64_t* counts) const {
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

}  // namespace vmetrics::internal
