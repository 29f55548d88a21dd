// SPDX-License-Identifier: Apache-2.0
// File: bucket_indexer.h
//
// A histogram family's bucket look-up, inlined into every observation (registry.h). The tables
// are built once per family (BucketIndex, bucket_indexer.cc); BucketIndexer is a small view of
// them that a loop over many values keeps in registers.
//
// Internal (include/vmetrics/internal/: included by registry.h so that observations inline, not
// a stable API). Owned by the metrics library.
//
// Thread safety: both are immutable once built; any thread may use them.
#ifndef VMETRICS_INTERNAL_BUCKET_INDEXER_H_
#define VMETRICS_INTERNAL_BUCKET_INDEXER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vmetrics::internal {

// BucketIndexer
//
// The index of the first bound >= v (bounds.size() for +Inf), -1 for NaN. When every bound is
// positive and normal and no binary octave holds more than four, it works from the value's
// exponent: a positive value of exponent e lies in [2^e, 2^(e+1)), so every bound of a lower
// exponent is below it and every bound of a higher one above, and only its octave's bounds are
// compared — two or four at once, without a branch on the value (exponents out of range clamp
// to an end of the table, a negative value counts as exponent 0, and the bounds after the
// octave, higher ones or the +Inf padding, compare false). vLLM's 1-2-5 and power-of-two
// buckets put at most two in one octave. Otherwise (linear or non-positive bounds) it counts
// every bound below v, two at a time.
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
  friend class BucketIndex;
  int CountBelow(double v) const;  // the plain count (bucket_indexer.cc)

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

// BucketIndex
//
// The tables of one family's BucketIndexer, built from its bounds (ascending and finite; none
// for a family that is not a histogram). Neither copied nor moved: the indexer points into it.
class BucketIndex {
 public:
  explicit BucketIndex(std::vector<double> bounds);
  BucketIndex(const BucketIndex&) = delete;
  BucketIndex& operator=(const BucketIndex&) = delete;

  const BucketIndexer& indexer() const { return indexer_; }
  size_t num_bounds() const { return bounds_.size(); }

 private:
  std::vector<double> bounds_;
  // When every bound is positive: octave_first_[e - octave_min + 1] is the number of bounds
  // whose binary exponent is below e (e from octave_min - 1 to octave_max + 1); the indexer
  // points into it and into octave_bounds_ (bounds_ followed by four +Inf). Empty otherwise.
  std::vector<uint16_t> octave_first_;
  std::vector<double> octave_bounds_;
  std::vector<double> cumulative_bounds_;  // CountMany's
  BucketIndexer indexer_;
};

}  // namespace vmetrics::internal

#endif  // VMETRICS_INTERNAL_BUCKET_INDEXER_H_
