// SPDX-License-Identifier: Apache-2.0
// Whole-rendering comparisons of WriteText / WriteOpenMetrics with what prometheus_client
// renders for the same registry (tests/golden/exposition_*.{txt,om}, written by
// tools/gen_exposition_goldens.py). BuildBasicRegistry mirrors that script's build_registry()
// step by step; change both together.
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "vmetrics/exposition.h"
#include "vmetrics/registry.h"

namespace vmetrics {
namespace {

const std::vector<double> kNixlBuckets = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                          0.2,   0.3,  0.5,   0.75, 1.0,   5.0};
const std::vector<double> kTokenBuckets = {1.0,       2.0,       5.0,       10.0,
                                           100.0,     1000.0,    10000.0,   100000.0,
                                           1000000.0, 2097152.0, 5000000.0, 123456789012.0};
const std::vector<std::string> kModelEngine = {"model_name", "engine"};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void BuildBasicRegistry(Registry& reg) {
  // 1. Labelled gauge, two engines.
  Family& running = reg.AddFamily({"vllm:num_requests_running",
                                   MetricType::kGauge,
                                   "Number of requests in model execution batches.",
                                   kModelEngine,
                                   {}});
  running.GetOrCreate({"m", "0"})->As<Gauge>()->Set(3);
  running.GetOrCreate({"m", "1"})->As<Gauge>()->Set(0);

  // 2. Counter without _total; engine 1 created first.
  Family& prompt = reg.AddFamily({"vllm:prompt_tokens",
                                  MetricType::kCounter,
                                  "Number of prefill tokens processed.",
                                  kModelEngine,
                                  {}});
  prompt.GetOrCreate({"m", "1"})->As<Counter>()->Add(0.001);
  prompt.GetOrCreate({"m", "0"})->As<Counter>()->Add(123456789012);

  // 3. Counter registered with _total.
  Family& flops = reg.AddFamily({"vllm:estimated_flops_per_gpu_total",
                                 MetricType::kCounter,
                                 "Estimated FLOPs per GPU.",
                                 kModelEngine,
                                 {}});
  flops.GetOrCreate({"m", "0"})->As<Counter>()->Add(2097152);
  flops.GetOrCreate({"m", "0"})->As<Counter>()->Add(1);

  // 4. Unlabelled counter (prometheus_client creates its only child at registration).
  Family& events = reg.AddFamily(
      {"vllm:unlabelled_events", MetricType::kCounter, "Events without labels.", {}, {}});
  events.GetOrCreate(std::initializer_list<std::string>{})->As<Counter>()->Add(5);

  // 5. Awkward values, escaped label values, escaped HELP.
  Family& values = reg.AddFamily({"vllm:test_values",
                                  MetricType::kGauge,
                                  "Help with back\\slash, \"quotes\" and\nnewline.",
                                  {"v"},
                                  {}});
  const std::pair<std::string, double> kValues[] = {
      {"tiny", 0.001},
      {"sum01_02", 0.1 + 0.2},
      {"million", 1234567},
      {"neg_million", -1234567},
      {"bigint", static_cast<double>(123456789012345678LL)},
      {"e16", 1e16},
      {"e21", 1e21},
      {"e-5", 1e-05},
      {"e-7", 1.5e-07},
      {"neg", -2.5},
      {"zero", 0.0},
      {"neg_zero", -0.0},
      {"nan", kNaN},
      {"inf", kInf},
      {"minus_inf", -kInf},
      {"esc\"\\\n", 1},
      {"caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b", 2},  // "café 模型"
      {"", 7},
  };
  for (const auto& [label, value] : kValues) values.GetOrCreate({label})->As<Gauge>()->Set(value);

  // 6. NIXL histogram: on bounds, above the top bucket, NaN.
  Family& nixl = reg.AddFamily({"vllm:nixl_xfer_time_seconds", MetricType::kHistogram,
                                "Histogram of transfer duration for NIXL KV Cache transfers.",
                                kModelEngine, kNixlBuckets});
  for (double v : {0.005, 0.02, 0.1, 0.15, 0.25, 7.0})
    nixl.GetOrCreate({"m", "0"})->As<Histogram>()->Observe(v);
  for (double v : {0.5, kNaN, 0.75}) nixl.GetOrCreate({"m", "1"})->As<Histogram>()->Observe(v);

  // 7. Large bounds and values.
  Family& tokens =
      reg.AddFamily({"vllm:request_prompt_tokens", MetricType::kHistogram,
                     "Number of prefill tokens processed.", kModelEngine, kTokenBuckets});
  for (double v : {1.0, 2097152.0, 3000000.0, 1e12})
    tokens.GetOrCreate({"m", "0"})->As<Histogram>()->Observe(v);

  // 8. Labels sorting on both sides of `le`.
  Family& le_order = reg.AddFamily({"vllm:test_le_order",
                                    MetricType::kHistogram,
                                    "Labels before and after le.",
                                    {"zone", "kind"},
                                    {0.1, 1.0}});
  le_order.GetOrCreate({"z\"1", "k\\1"})->As<Histogram>()->Observe(0.5);

  // 9. Unlabelled histogram.
  Family& unlabelled = reg.AddFamily({"vllm:unlabelled_seconds",
                                      MetricType::kHistogram,
                                      "Histogram without labels.",
                                      {},
                                      {0.5, 1.0}});
  unlabelled.GetOrCreate(std::initializer_list<std::string>{})->As<Histogram>()->Observe(0.7);

  // 10. Negative first bound: no _sum.
  Family& negative = reg.AddFamily({"vllm:test_negative_buckets",
                                    MetricType::kHistogram,
                                    "Negative first bucket.",
                                    {"engine"},
                                    {-1.0, 0.0, 1.0}});
  negative.GetOrCreate({"0"})->As<Histogram>()->Observe(-2);
  negative.GetOrCreate({"0"})->As<Histogram>()->Observe(0.5);

  // 11-13. Labelled families without children.
  reg.AddFamily({"vllm:lora_failures",
                 MetricType::kCounter,
                 "Failures with no children.",
                 {"model_name"},
                 {}});
  reg.AddFamily({"vllm:empty_histogram",
                 MetricType::kHistogram,
                 "Histogram with no children.",
                 kModelEngine,
                 {1.0}});
  reg.AddFamily({"vllm:lora_requests_info",
                 MetricType::kGauge,
                 "Running stats on lora requests.",
                 {"max_lora", "waiting_lora_adapters", "running_lora_adapters"},
                 {}});
}

std::string ReadGolden(const std::string& name) {
  const std::string path = std::string(VMETRICS_GOLDEN_DIR) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Byte-for-byte comparison that, on failure, names the first differing line and prints both
// renderings whole.
void ExpectSameRendering(const std::string& expected, const std::string& actual) {
  if (expected == actual) return;
  size_t line = 1;
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) {
    if (expected[i] == '\n') ++line;
    ++i;
  }
  ADD_FAILURE() << "renderings differ at byte " << i << " (line " << line << ")\n"
                << "---- expected (" << expected.size() << " bytes) ----\n"
                << expected << "---- actual (" << actual.size() << " bytes) ----\n"
                << actual << "---- end ----";
}

class WriterGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override { BuildBasicRegistry(registry_); }

  FixedClock clock_{123.456};  // client_python's own tests pin time.time to 123.456
  Registry registry_{&clock_};
};

TEST_F(WriterGoldenTest, TextMatchesPrometheusClient) {
  std::string out;
  WriteText(registry_, ExpositionOptions{}, &out);
  ExpectSameRendering(ReadGolden("exposition_basic.txt"), out);
}

TEST_F(WriterGoldenTest, OpenMetricsMatchesPrometheusClient) {
  std::string out;
  WriteOpenMetrics(registry_, ExpositionOptions{}, &out);
  ExpectSameRendering(ReadGolden("exposition_basic.om"), out);
}

TEST_F(WriterGoldenTest, TextWithoutCreatedMatchesPrometheusClient) {
  ExpositionOptions options;
  options.created_series = false;
  std::string out;
  WriteText(registry_, options, &out);
  ExpectSameRendering(ReadGolden("exposition_no_created.txt"), out);
}

TEST_F(WriterGoldenTest, OpenMetricsWithoutCreatedMatchesPrometheusClient) {
  ExpositionOptions options;
  options.created_series = false;
  std::string out;
  WriteOpenMetrics(registry_, options, &out);
  ExpectSameRendering(ReadGolden("exposition_no_created.om"), out);
}

TEST_F(WriterGoldenTest, WritersAppendAndRepeatIdentically) {
  std::string out = "keep\n";
  WriteText(registry_, ExpositionOptions{}, &out);
  WriteText(registry_, ExpositionOptions{}, &out);
  const std::string golden = ReadGolden("exposition_basic.txt");
  ExpectSameRendering("keep\n" + golden + golden, out);
}

TEST(Writers, EmptyRegistry) {
  FixedClock clock(123.456);
  Registry reg(&clock);
  std::string text;
  WriteText(reg, ExpositionOptions{}, &text);
  EXPECT_EQ(text, "");
  std::string om;
  WriteOpenMetrics(reg, ExpositionOptions{}, &om);
  EXPECT_EQ(om, "# EOF\n");
}

TEST(Writers, ChildrenAddedLaterAppearInCreationOrder) {
  FixedClock clock(1e9);
  Registry reg(&clock);
  Family& f = reg.AddFamily({"vllm:c", MetricType::kCounter, "C.", {"engine"}, {}});
  f.GetOrCreate({"b"})->As<Counter>()->Add(1);
  f.GetOrCreate({"a"})->As<Counter>()->Add(2);
  std::string out;
  WriteText(reg, ExpositionOptions{}, &out);
  EXPECT_EQ(out,
            "# HELP vllm:c_total C.\n"
            "# TYPE vllm:c_total counter\n"
            "vllm:c_total{engine=\"b\"} 1.0\n"
            "vllm:c_total{engine=\"a\"} 2.0\n"
            "# HELP vllm:c_created C.\n"
            "# TYPE vllm:c_created gauge\n"
            "vllm:c_created{engine=\"b\"} 1e+09\n"
            "vllm:c_created{engine=\"a\"} 1e+09\n");
}

}  // namespace
}  // namespace vmetrics
