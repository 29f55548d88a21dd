// SPDX-License-Identifier: Apache-2.0
#include "cumulative_count.h"

#include <utility>

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define VMETRICS_CUMULATIVE_X86 1
#endif

namespace vmetrics::internal {
namespace {

#if defined(VMETRICS_CUMULATIVE_X86)
// The group counts are template constants so that the running counts and the bounds live in
// registers for the whole loop.
template <size_t kPairs>
double CountSse2(const double* bounds, std::span<const double> values, double sum,
                 uint64_t* cumulative) {
  __m128d bound[kPairs];
  __m128i at_or_below[kPairs];
#pragma GCC unroll 16
  for (size_t p = 0; p < kPairs; ++p) {
    bound[p] = _mm_loadu_pd(bounds + 2 * p);
    at_or_below[p] = _mm_setzero_si128();
  }
  for (const double v : values) {
    sum += v;
    const __m128d value = _mm_set1_pd(v);
#pragma GCC unroll 16
    for (size_t p = 0; p < kPairs; ++p) {
      // A lane is all ones (-1) where v <= its bound; false for NaN.
      at_or_below[p] =
          _mm_sub_epi64(at_or_below[p], _mm_castpd_si128(_mm_cmple_pd(value, bound[p])));
    }
  }
#pragma GCC unroll 16
  for (size_t p = 0; p < kPairs; ++p) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(cumulative + 2 * p), at_or_below[p]);
  }
  return sum;
}

template <size_t kQuads>
__attribute__((target("avx2"))) double CountAvx2(const double* bounds,
                                                 std::span<const double> values, double sum,
                                                 uint64_t* cumulative) {
  __m256d bound[kQuads];
  __m256i at_or_below[kQuads];
#pragma GCC unroll 16
  for (size_t q = 0; q < kQuads; ++q) {
    bound[q] = _mm256_loadu_pd(bounds + 4 * q);
    at_or_below[q] = _mm256_setzero_si256();
  }
  for (const double v : values) {
    sum += v;
    const __m256d value = _mm256_set1_pd(v);
#pragma GCC unroll 16
    for (size_t q = 0; q < kQuads; ++q) {
      // Ordered and quiet: false for NaN, as the SSE2 comparison.
      at_or_below[q] = _mm256_sub_epi64(
          at_or_below[q], _mm256_castpd_si256(_mm256_cmp_pd(value, bound[q], _CMP_LE_OQ)));
    }
  }
#pragma GCC unroll 16
  for (size_t q = 0; q < kQuads; ++q) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(cumulative + 4 * q), at_or_below[q]);
  }
  return sum;
}

// Kernels by group of four bounds: entry g counts 4 * (g + 1) bounds.
template <size_t... kGroups>
constexpr auto MakeTable(CountIsa isa, std::index_sequence<kGroups...>) {
  using Table = CumulativeCounter[sizeof...(kGroups)];
  struct Wrapped {
    Table table;
  };
  return isa == CountIsa::kAvx2 ? Wrapped{{&CountAvx2<kGroups + 1>...}}
                                : Wrapped{{&CountSse2<2 * (kGroups + 1)>...}};
}
constexpr size_t kGroups = kMaxCumulativeBounds / kCumulativeBoundsMultiple;
constexpr auto kSse2Table = MakeTable(CountIsa::kSse2, std::make_index_sequence<kGroups>());
constexpr auto kAvx2Table = MakeTable(CountIsa::kAvx2, std::make_index_sequence<kGroups>());
#endif

}  // namespace

CumulativeCounter CumulativeCounterFor(size_t padded_bounds, CountIsa isa) {
#if defined(VMETRICS_CUMULATIVE_X86)
  if (padded_bounds == 0 || padded_bounds % kCumulativeBoundsMultiple != 0 ||
      padded_bounds > kMaxCumulativeBounds) {
    return nullptr;
  }
  const size_t g = padded_bounds / kCumulativeBoundsMultiple - 1;
  return isa == CountIsa::kAvx2 ? kAvx2Table.table[g] : kSse2Table.table[g];
#else
  (void)padded_bounds;
  (void)isa;
  return nullptr;
#endif
}

CountIsa BestCountIsa() {
#if defined(VMETRICS_CUMULATIVE_X86)
  __builtin_cpu_init();  // may run from a static initializer, before the library's own
  static const CountIsa best = __builtin_cpu_supports("avx2") ? CountIsa::kAvx2 : CountIsa::kSse2;
  return best;
#else
  return CountIsa::kSse2;
#endif
}

}  // namespace vmetrics::internal
