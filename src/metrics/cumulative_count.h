// SPDX-License-Identifier: Apache-2.0
// File: cumulative_count.h
//
// Counting a list of values into a histogram's buckets without a memory update per value
// (BucketIndexer::CountMany). Each value is compared with every bound at once, several per
// instruction, and the comparisons are summed into running cumulative counts that stay in
// registers: cumulative[k] = how many values are <= bounds[k]. Whatever order the values come
// in, and however they spread over the buckets, a value costs the same few instructions.
//
// Two kernels: SSE2 (two bounds per instruction, every x86-64 CPU) and AVX2 (four), chosen at
// run time by what the CPU has. Both give the same counts; tests run each.
#ifndef VMETRICS_METRICS_CUMULATIVE_COUNT_H_
#define VMETRICS_METRICS_CUMULATIVE_COUNT_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace vmetrics::internal {

// The most bounds a kernel compares, +Inf and its padding included: 23 finite bounds and +Inf
// (vLLM's widest family has 22).
inline constexpr size_t kMaxCumulativeBounds = 24;
// Kernels compare bounds in groups of four: a family's bounds are followed by +Inf up to a
// multiple of this.
inline constexpr size_t kCumulativeBoundsMultiple = 4;

enum class CountIsa : uint8_t { kSse2, kAvx2 };

// Sets cumulative[k], for k < the padded bound count, to how many of `values` are <= bounds[k]
// (NaN is <= no bound, +Inf included), and returns `sum` plus each value in order: a
// histogram's sum, added in the same loop, where the adds' latency hides the comparisons.
using CumulativeCounter = double (*)(const double* bounds, std::span<const double> values,
                                     double sum, uint64_t* cumulative);

// The kernel for `padded_bounds` bounds (a multiple of kCumulativeBoundsMultiple, at most
// kMaxCumulativeBounds) on `isa`; nullptr if there is none (no SSE2 at build time, or a count
// out of range).
CumulativeCounter CumulativeCounterFor(size_t padded_bounds, CountIsa isa);

// The widest kernel this CPU runs.
CountIsa BestCountIsa();

}  // namespace vmetrics::internal

#endif  // VMETRICS_METRICS_CUMULATIVE_COUNT_H_
