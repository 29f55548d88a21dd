// SPDX-License-Identifier: Apache-2.0
// Tests of SchedulerStats.ec_connector_stats decoding (src/protocol/scheduler_stats.cc): the
// ECCPUConnector payload {types, data} of the newest wire generation's stats_ec capture, and
// the hostile payloads of the ec_cpu golden scenario (tools/gen_goldens.py), whose bad parts
// are reported and left out while the rest is kept.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::FixturePath;
using ::vmetrics::testing::ReadFile;
using ::vmetrics::testing::RecordingReporter;
using ::vmetrics::testing::SplitMessages;

struct Decoded {
  EngineCoreOutputs message;
  RecordingReporter reporter;
};

void DecodeMessage(std::string_view frame0, Decoded* out) {
  DecodeContext ctx;
  ctx.reporter = &out->reporter;
  ASSERT_TRUE(DecodeOne(frame0, ctx, &out->message).ok());
  ASSERT_TRUE(out->message.scheduler_stats.has_value());
  EXPECT_EQ(out->message.skipped.scheduler_stats, 0u);
}

TEST(EcConnectorStats, TheEcCpuPayloadOfTheNewestGenerationDecodesInDataOrder) {
  const std::string data =
      ReadFile(FixturePath("wire_generations/gnewest-20260924_stats_ec.msgpack"));
  const std::vector<std::string_view> messages = SplitMessages(data);
  ASSERT_EQ(messages.size(), 7u);

  Decoded first;
  DecodeMessage(messages[0], &first);
  const std::optional<EcConnectorStats>& ec = first.message.scheduler_stats->ec_connector_stats;
  ASSERT_TRUE(ec.has_value());
  ASSERT_EQ(ec->values.size(), 3u);
  EXPECT_EQ(ec->values[0].name, "vllm:ec_cpu_save_bytes");
  EXPECT_FALSE(ec->values[0].histogram);
  EXPECT_EQ(ec->values[0].increment, 9400000.0);
  EXPECT_EQ(ec->values[1].name, "vllm:ec_cpu_save_time_seconds");
  EXPECT_EQ(ec->values[1].increment, 0.021);
  EXPECT_EQ(ec->values[2].name, "vllm:ec_cpu_save_size_bytes");
  EXPECT_TRUE(ec->values[2].histogram);
  EXPECT_EQ(ec->values[2].samples, (std::vector<double>{4700000, 4700000}));
  EXPECT_TRUE(first.reporter.problems.empty());

  // A step without EC statistics sends nil.
  Decoded third;
  DecodeMessage(messages[2], &third);
  EXPECT_FALSE(third.message.scheduler_stats->ec_connector_stats.has_value());
  // The rest of the SchedulerStats is decoded beside it.
  EXPECT_TRUE(first.message.scheduler_stats->kv_connector_stats.has_value());
}

TEST(EcConnectorStats, HostileEntriesAreReportedAndLeftOutTheRestIsKept) {
  const std::string data = ReadFile(FixturePath("../golden/inputs/ec_cpu.msgpack"));
  const std::vector<std::string_view> messages = SplitMessages(data);
  ASSERT_EQ(messages.size(), 8u);

  // Message 5: a `types` entry with an int key, a counter that is a str, two non-number
  // histogram samples, an unknown type, histogram samples that are not a list, a value with no
  // type. Kept: what decodes, even where recording will refuse it (the connector's families and
  // their types are the metrics library's business).
  Decoded hostile;
  DecodeMessage(messages[4], &hostile);
  const std::optional<EcConnectorStats>& ec = hostile.message.scheduler_stats->ec_connector_stats;
  ASSERT_TRUE(ec.has_value());
  std::vector<std::string_view> kept;
  for (const EcConnectorValue& v : ec->values) kept.push_back(v.name);
  EXPECT_EQ(kept, (std::vector<std::string_view>{
                      "vllm:ec_cpu_load_bytes", "vllm:ec_cpu_save_size_bytes",
                      "vllm:ec_cpu_evictions", "vllm:ec_cpu_save_time_seconds"}));
  EXPECT_TRUE(ec->values[0].histogram);  // as `types` says; its family is a counter
  EXPECT_EQ(ec->values[1].samples, (std::vector<double>{2000000, 2000000}));
  EXPECT_EQ(ec->values[3].increment, -0.25);
  EXPECT_EQ(hostile.reporter.problems.size(), 7u);

  // Message 6: not a map. Message 7: `types` not a map. Message 8: `data` nil. One problem
  // each; nothing is kept.
  for (size_t i : {5u, 6u, 7u}) {
    Decoded d;
    DecodeMessage(messages[i], &d);
    const std::optional<EcConnectorStats>& stats = d.message.scheduler_stats->ec_connector_stats;
    EXPECT_TRUE(!stats.has_value() || stats->values.empty()) << i;
    EXPECT_EQ(d.reporter.problems.size(), 1u) << i;
  }
}

}  // namespace
}  // namespace vmetrics
