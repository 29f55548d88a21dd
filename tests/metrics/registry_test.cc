// SPDX-License-Identifier: Apache-2.0
#include "vmetrics/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace vmetrics {
namespace {

TEST(Registry, FamiliesKeepRegistrationOrderAndChildrenCreationOrder) {
  FixedClock clock(1.5);
  Registry reg(&clock);
  reg.AddFamily({"b", MetricType::kGauge, "B.", {"engine"}});
  Family& a = reg.AddFamily({"a", MetricType::kCounter, "A.", {"engine"}});
  a.GetOrCreate({"1"});
  a.GetOrCreate({"0"});
  auto families = reg.Families();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0]->name(), "b");
  EXPECT_EQ(families[1]->name(), "a");
  auto children = a.Children();
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0]->label_values()[0], "1");
  EXPECT_EQ(children[1]->label_values()[0], "0");
  EXPECT_EQ(children[0]->created(), 1.5);
}

TEST(Registry, RenderGroupOneStaysAfterLaterGroupZeroFamilies) {
  Registry reg;
  FamilySpec own{"vmetrics_x", MetricType::kCounter, "X.", {}};
  own.render_group = 1;
  reg.AddFamily(own);
  reg.AddFamily({"vllm:late", MetricType::kGauge, "L.", {}});
  auto families = reg.Families();
  EXPECT_EQ(families[0]->name(), "vllm:late");
  EXPECT_EQ(families[1]->name(), "vmetrics_x");
}

TEST(Registry, CounterNameLosesOneTotalSuffixLikePython) {
  Registry reg;
  Family& f = reg.AddFamily({"vllm:estimated_flops_per_gpu_total", MetricType::kCounter, "F.", {}});
  EXPECT_EQ(f.name(), "vllm:estimated_flops_per_gpu");
  Family& g = reg.AddFamily({"vllm:gauge_total", MetricType::kGauge, "G.", {}});
  EXPECT_EQ(g.name(), "vllm:gauge_total");
}

TEST(Registry, GetOrCreateBoundedRefusesNewChildrenPastTheLimitButFindsExistingOnes) {
  Registry reg;
  Family& f = reg.AddFamily({"f", MetricType::kCounter, "F.", {"operation"}});
  Child* eager = f.GetOrCreate({"a"});
  using Values = std::vector<std::string_view>;
  Child* b = f.GetOrCreateBounded(Values{"b"}, 2);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f.GetOrCreateBounded(Values{"c"}, 2), nullptr);  // a and b: the family is full
  EXPECT_EQ(f.GetOrCreateBounded(Values{"a"}, 2), eager);    // existing children still found
  EXPECT_EQ(f.GetOrCreateBounded(Values{"b"}, 2), b);
  EXPECT_EQ(f.Children().size(), 2u);                        // nothing registered for c
  EXPECT_NE(f.GetOrCreateBounded(Values{"c"}, 3), nullptr);  // a larger limit admits it
}

TEST(Registry, SameNameReturnsTheExistingFamily) {
  Registry reg;
  Family& a = reg.AddFamily({"x", MetricType::kCounter, "X.", {}});
  Family& b = reg.AddFamily({"x", MetricType::kCounter, "X.", {}});
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(reg.Families().size(), 1u);
}

// A child is created as the series of its family's type: As gives it for that type only, and a
// TypedFamily hands it out typed.
TEST(Child, IsTheSeriesOfItsFamilysTypeAndNoOther) {
  Registry reg;
  Family& counters = reg.AddFamily({"c", MetricType::kCounter, "C.", {"k"}});
  Family& gauges = reg.AddFamily({"g", MetricType::kGauge, "G.", {"k"}});
  Family& histograms = reg.AddFamily({"h", MetricType::kHistogram, "H.", {"k"}, {1.0}});
  Child* c = counters.GetOrCreate({"x"});
  EXPECT_EQ(c->type(), MetricType::kCounter);
  ASSERT_NE(c->As<Counter>(), nullptr);
  EXPECT_EQ(c->As<Gauge>(), nullptr);
  EXPECT_EQ(c->As<Histogram>(), nullptr);
  EXPECT_EQ(gauges.GetOrCreate({"x"})->As<Counter>(), nullptr);
  ASSERT_NE(gauges.GetOrCreate({"x"})->As<Gauge>(), nullptr);
  EXPECT_EQ(histograms.GetOrCreate({"x"})->As<Gauge>(), nullptr);
  const Child* constant = histograms.GetOrCreate({"x"});
  EXPECT_NE(constant->As<Histogram>(), nullptr);

  const GaugeFamily typed(&gauges);
  Gauge* g = typed.GetOrCreate({"y"});
  g->Set(2.5);
  EXPECT_EQ(gauges.GetOrCreate({"y"}), g) << "the same child, typed";
  EXPECT_EQ(g->value(), 2.5);
  const std::string_view y[] = {"y"}, z[] = {"z"};
  EXPECT_EQ(typed.GetOrCreateBounded(y, 1), g);
  EXPECT_EQ(typed.GetOrCreateBounded(z, 2), nullptr) << "x and y fill it";
  EXPECT_FALSE(GaugeFamily()) << "a default TypedFamily has no family";
  EXPECT_TRUE(typed);
}

// A family registered before its label names are known is replaced in its place, whole.
TEST(Registry, AReplacedFamilyKeepsItsPlaceAndItsNameFindsTheReplacement) {
  FixedClock clock(1);
  Registry reg(&clock);
  reg.AddFamily({"first", MetricType::kGauge, "F.", {}});
  Family& placeholder = reg.AddFamily({"x_info", MetricType::kGauge, "X.", {}});
  reg.AddFamily({"last", MetricType::kGauge, "L.", {}});
  reg.AddFamily({"own", MetricType::kCounter, "O.", {}, {}, 1});
  std::unique_ptr<Family> labelled = reg.MakeFamily({"x_info", MetricType::kGauge, "X.", {"k"}});
  EXPECT_EQ(reg.Families().size(), 4u) << "made, not registered";
  labelled->GetOrCreate({"v"})->As<Gauge>()->Set(1);
  Family* made = labelled.get();
  EXPECT_EQ(&reg.ReplaceFamily(placeholder, std::move(labelled)), made);
  std::vector<std::string> names;
  for (const Family* f : reg.Families()) names.push_back(f->name());
  EXPECT_EQ(names, (std::vector<std::string>{"first", "x_info", "last", "own"}));
  EXPECT_EQ(reg.Families()[1], made);
  EXPECT_EQ(reg.Find("x_info"), made);
  EXPECT_EQ(&reg.AddFamily({"x_info", MetricType::kGauge, "X.", {"k"}}), made);
  EXPECT_TRUE(placeholder.Children().empty()) << "the placeholder stays alive for old renders";
}

TEST(Child, CounterRefusesNegativeAndNanIncrements) {
  Registry reg;
  Counter* c = reg.AddFamily({"c", MetricType::kCounter, "C.", {}})
                   .GetOrCreate(std::span<const std::string>())
                   ->As<Counter>();
  EXPECT_TRUE(c->Add(2.5));
  EXPECT_FALSE(c->Add(-1));
  EXPECT_FALSE(c->Add(std::nan("")));
  EXPECT_EQ(c->value(), 2.5);
}

TEST(Child, HistogramBucketsAreInclusiveUpperBounds) {
  Registry reg;
  Family& h = reg.AddFamily({"h", MetricType::kHistogram, "H.", {}, {0.1, 1.0}});
  Histogram* c = h.GetOrCreate(std::span<const std::string>())->As<Histogram>();
  c->Observe(0.1);  // on the bound: first bucket
  c->Observe(0.5);  // second
  c->Observe(1.0);  // on the bound: second
  c->Observe(7.0);  // +Inf
  EXPECT_EQ(c->bucket_count(0), 1u);
  EXPECT_EQ(c->bucket_count(1), 2u);
  EXPECT_EQ(c->bucket_count(2), 1u);
  EXPECT_DOUBLE_EQ(c->sum(), 8.6);
}

// BucketIndex finds a bucket from the value's binary exponent when every bound is positive
// (comparing only the bounds of its octave) and by counting otherwise. Both must answer what
// the definition says, the number of bounds below the value, for every value: on each bound,
// just beside it, between octaves, zero, negative, subnormal, huge, infinite and NaN.
TEST(Family, BucketIndexIsTheNumberOfBoundsBelowTheValueForEveryBucketShape) {
  std::vector<std::vector<double>> shapes = {
      {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 50, 100},  // 1-5 (NIXL durations)
      {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},   // 1-2-5 (token counts)
      {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
       30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680},  // vLLM's request latencies
      {16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2147483648.0},  // powers of two
      {1, 1.2, 1.5, 3, 100},                          // three in one octave: four compared
      {0.125, 0.15, 0.175, 0.2, 1, 1.25, 1.5, 1.75},  // four in one octave, at the top end
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},  // linear: counted
      {-5, -1, 0, 1, 5},                                        // not all positive: counted
      {0, 0.5, 1},                                              // zero bound: counted
      {1e-300, 1e300},                                          // exponents far apart
      {7.0},
  };
  // The most bounds CountMany takes (23), and one more (it declines; values are indexed).
  shapes.push_back({});
  for (int i = 1; i <= 23; ++i) shapes.back().push_back(0.1 * i);
  shapes.push_back(shapes.back());
  shapes.back().push_back(2.5);
  std::vector<double> probes = {0.0,
                                -0.0,
                                -1.0,
                                -1e300,
                                1e-320,
                                1e-300,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::max()};
  for (const auto& bounds : shapes) {
    for (double b : bounds) {
      probes.insert(probes.end(), {b, std::nextafter(b, -INFINITY), std::nextafter(b, INFINITY),
                                   b * 0.75, b * 1.5, b * 2, b / 2});
    }
  }
  for (int i = -40; i <= 40; ++i) probes.push_back(std::ldexp(1.0, i) * 1.37);
  for (size_t s = 0; s < shapes.size(); ++s) {
    Registry reg;
    Family& h =
        reg.AddFamily({"h" + std::to_string(s), MetricType::kHistogram, "H.", {}, shapes[s]});
    for (double v : probes) {
      const int expected = static_cast<int>(
          std::count_if(shapes[s].begin(), shapes[s].end(), [v](double b) { return b < v; }));
      EXPECT_EQ(h.BucketIndex(v), expected) << "shape " << s << " value " << v;
      EXPECT_EQ(h.bucket_indexer()(v), expected) << "shape " << s << " value " << v;
    }
    EXPECT_EQ(h.BucketIndex(std::nan("")), -1) << "shape " << s;
    // CountMany counts a list into the buckets the index gives each value, NaN in none.
    std::vector<uint64_t> indexed(shapes[s].size() + 1, 0);
    for (double v : probes) ++indexed[static_cast<size_t>(h.BucketIndex(v))];
    probes.push_back(std::nan(""));
    std::vector<uint64_t> counted(indexed.size(), 777);
    double sum = 0;
    if (h.bucket_indexer().CountMany(probes, &sum, counted.data())) {
      EXPECT_LE(shapes[s].size(), 23u);
      EXPECT_EQ(counted, indexed) << "shape " << s;
      EXPECT_TRUE(std::isnan(sum));
    } else {
      EXPECT_GT(shapes[s].size(), 23u) << "shape " << s;
      EXPECT_EQ(counted, std::vector<uint64_t>(indexed.size(), 777)) << "declined: untouched";
      EXPECT_EQ(sum, 0) << "declined: untouched";
    }
    probes.pop_back();
  }
}

TEST(Child, NanObservationChangesSumOnlyLikePrometheusClient) {
  Registry reg;
  Family& h = reg.AddFamily({"h", MetricType::kHistogram, "H.", {}, {1.0}});
  Histogram* c = h.GetOrCreate(std::span<const std::string>())->As<Histogram>();
  c->Observe(std::nan(""));
  EXPECT_EQ(c->bucket_count(0) + c->bucket_count(1), 0u);
  EXPECT_TRUE(std::isnan(c->sum()));
}

// The single-writer updates must leave exactly what the atomic ones leave: same buckets, the
// same sum bit for bit (the values are added in the same order), the same refusals.
TEST(Child, ExclusiveAndBatchedUpdatesMatchAtomicOnesBitForBit) {
  Registry reg;
  const std::vector<double> bounds = {0.001, 0.01, 0.1, 1.0, 10.0};
  Family& h = reg.AddFamily({"h", MetricType::kHistogram, "H.", {"k"}, bounds});
  Family& c = reg.AddFamily({"c", MetricType::kCounter, "C.", {"k"}});
  Histogram* atomic_h = h.GetOrCreate({"atomic"})->As<Histogram>();
  Histogram* one_h = h.GetOrCreate({"one"})->As<Histogram>();
  Histogram* many_h = h.GetOrCreate({"many"})->As<Histogram>();
  Counter* atomic_c = c.GetOrCreate({"atomic"})->As<Counter>();
  Counter* one_c = c.GetOrCreate({"one"})->As<Counter>();
  // Sums like 0.1 + 0.2 differ with the order of addition; NaN, a bound, and +Inf-bucket values.
  std::vector<double> values = {0.1, 0.2, 0.3, 0.001, 1e-7, 10.0, 12.5, std::nan(""), 0.07};
  for (int i = 0; i < 200; ++i) values.push_back(0.0003 * i * i);
  for (const double v : values) {
    atomic_h->Observe(v);
    one_h->ObserveExclusive(v);
    EXPECT_EQ(atomic_c->Add(v), one_c->AddExclusive(v)) << v;
  }
  many_h->ObserveManyExclusive(std::span<const double>(values).first(4));
  many_h->ObserveManyExclusive(std::span<const double>(values).subspan(4));
  many_h->ObserveManyExclusive({});
  Histogram* batch_h = h.GetOrCreate({"batch"})->As<Histogram>();
  batch_h->ObserveMany(std::span<const double>(values).first(4));
  batch_h->ObserveMany(std::span<const double>(values).subspan(4));
  batch_h->ObserveMany({});
  for (size_t b = 0; b <= bounds.size(); ++b) {
    EXPECT_EQ(one_h->bucket_count(b), atomic_h->bucket_count(b)) << "bucket " << b;
    EXPECT_EQ(many_h->bucket_count(b), atomic_h->bucket_count(b)) << "bucket " << b;
    EXPECT_EQ(batch_h->bucket_count(b), atomic_h->bucket_count(b)) << "bucket " << b;
  }
  EXPECT_TRUE(std::isnan(atomic_h->sum()));
  EXPECT_TRUE(std::isnan(one_h->sum()) && std::isnan(many_h->sum()) && std::isnan(batch_h->sum()));
  EXPECT_EQ(one_c->value(), atomic_c->value());
  EXPECT_FALSE(one_c->AddExclusive(-1)) << "negative increments are refused";

  // Without the NaN the sums are comparable bit for bit.
  Histogram* atomic_sum = h.GetOrCreate({"atomic_sum"})->As<Histogram>();
  Histogram* many_sum = h.GetOrCreate({"many_sum"})->As<Histogram>();
  values.erase(values.begin() + 7);
  for (const double v : values) atomic_sum->Observe(v);
  many_sum->ObserveManyExclusive(values);
  EXPECT_EQ(std::bit_cast<uint64_t>(many_sum->sum()), std::bit_cast<uint64_t>(atomic_sum->sum()));
  Histogram* batch_sum = h.GetOrCreate({"batch_sum"})->As<Histogram>();
  batch_sum->ObserveMany(std::span<const double>(values).first(100));
  batch_sum->ObserveMany(std::span<const double>(values).subspan(100));
  EXPECT_EQ(std::bit_cast<uint64_t>(batch_sum->sum()), std::bit_cast<uint64_t>(atomic_sum->sum()));
  // More buckets than ObserveMany counts locally: counted one by one, same result.
  std::vector<double> many_bounds;
  for (int i = 1; i <= 40; ++i) many_bounds.push_back(0.05 * i);
  Family& wide = reg.AddFamily({"wide", MetricType::kHistogram, "W.", {"k"}, many_bounds});
  Histogram* wide_one = wide.GetOrCreate({"one"})->As<Histogram>();
  Histogram* wide_batch = wide.GetOrCreate({"batch"})->As<Histogram>();
  for (const double v : values) wide_one->Observe(v);
  wide_batch->ObserveMany(values);
  for (size_t b = 0; b <= many_bounds.size(); ++b) {
    EXPECT_EQ(wide_batch->bucket_count(b), wide_one->bucket_count(b)) << "bucket " << b;
  }
  EXPECT_EQ(std::bit_cast<uint64_t>(wide_batch->sum()), std::bit_cast<uint64_t>(wide_one->sum()));
}

TEST(Registry, ConcurrentRecordingAndChildCreationLoseNothing) {
  Registry reg;
  Family& f = reg.AddFamily({"c", MetricType::kCounter, "C.", {"engine"}});
  Counter* shared = f.GetOrCreate({"0"})->As<Counter>();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        shared->Add(1);
        if (i % 1000 == 0) f.GetOrCreate({std::to_string(t * 100 + i / 1000)});
        if (i % 5000 == 0) (void)f.Children();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(shared->value(), 80000.0);
}

TEST(Registry, ConcurrentBatchedAndSingleObservationsLoseNothing) {
  Registry reg;
  Family& f = reg.AddFamily({"h", MetricType::kHistogram, "H.", {}, {1, 2, 4}});
  Histogram* shared = f.GetOrCreate(std::span<const std::string>())->As<Histogram>();
  const std::vector<double> batch = {0.5, 1, 1.5, 3, 5};  // two in the first bucket, +Inf too
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        if (t % 2 == 0) {
          shared->ObserveMany(batch);
        } else {
          for (const double v : batch) shared->Observe(v);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(shared->bucket_count(b), b == 0 ? 40000u : 20000u) << "bucket " << b;
  }
  EXPECT_EQ(shared->sum(), 4 * 5000 * 11.0) << "integral halves: every order sums exactly";
}

}  // namespace
}  // namespace vmetrics
