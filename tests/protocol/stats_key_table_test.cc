// SPDX-License-Identifier: Apache-2.0
// Tests of the SchedulerStats field table (kStatsKeyRows, include/vmetrics/wire_generation.h):
// FindStatsKey finds each row by its name and nothing else, and the decoder
// (src/protocol/scheduler_stats.cc) does with each key what its row says (docs/wire_format.md
// prints the rows): a decoded key takes its msgpack types without a report and reports any
// other; a skipped key is read past whatever it holds.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using ::vmetrics::testing::RecordingReporter;

TEST(StatsKeyTable, EveryRowIsFoundByItsNameAndNothingElseIs) {
  for (const StatsKeyRow& row : kStatsKeyRows) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(FindStatsKey(row.name), row.key);
    EXPECT_EQ(StatsKeyName(row.key), row.name);
    const std::string name(row.name);
    EXPECT_EQ(FindStatsKey(name.substr(0, name.size() - 1)), StatsKey::kUnknown);
    EXPECT_EQ(FindStatsKey(name + "s"), StatsKey::kUnknown);
    // The same length as the name: only the bytes tell them apart.
    std::string twin = name;
    twin.back() = twin.back() == 'z' ? 'y' : 'z';
    EXPECT_EQ(FindStatsKey(twin), StatsKey::kUnknown) << twin;
  }
  EXPECT_EQ(FindStatsKey(""), StatsKey::kUnknown);
  EXPECT_EQ(FindStatsKey("perf"), StatsKey::kUnknown);
  EXPECT_EQ(FindStatsKey(std::string_view("num_running_reqs\0", 17)), StatsKey::kUnknown);
}

// One msgpack value of each type (WireTypeBit order).
struct TypedValue {
  uint16_t bit;
  std::string_view name;
  std::string bytes;
};
const TypedValue kValues[] = {
    {kWireNil, "nil", std::string("\xc0", 1)},
    {kWireBool, "bool", std::string("\xc3", 1)},
    {kWireInt, "int", std::string("\x05", 1)},
    {kWireFloat, "float", std::string("\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00", 9)},
    {kWireStr, "str", std::string("\xa1x", 2)},
    {kWireBin, "bin", std::string("\xc4\x01\x00", 3)},
    {kWireArray, "array", std::string("\x90", 1)},
    {kWireMap, "map", std::string("\x80", 1)},
    {kWireExt, "ext", std::string("\xd4\x03\x00", 3)},  // raw view: other ext types end the message
};

// {key: value} as a SchedulerStats map.
std::string OneKeyMap(std::string_view key, const std::string& value) {
  std::string out = "\x81";
  out += static_cast<char>(0xa0 | key.size());  // every key is a fixstr (< 32 bytes)
  out += key;
  return out + value;
}

TEST(StatsKeyTable, TheDecoderDoesWithEachKeyWhatItsRowSays) {
  for (const StatsKeyRow& row : kStatsKeyRows) {
    ASSERT_LT(row.name.size(), 32u);
    for (const TypedValue& v : kValues) {
      SCOPED_TRACE(std::string(row.name) + " holding " + std::string(v.name));
      RecordingReporter reporter;
      DecodeContext ctx;
      ctx.reporter = &reporter;
      SchedulerStats stats;
      ASSERT_TRUE(DecodeSchedulerStats(OneKeyMap(row.name, v.bytes), 0, ctx, &stats).ok());
      const bool reported = !reporter.problems.empty();
      if (row.use == StatsKeyUse::kSkipped) {
        EXPECT_FALSE(reported) << "a skipped key is never reported:\n" << reporter.Dump();
      } else if ((row.accepted & v.bit) != 0) {
        EXPECT_FALSE(reported) << "an accepted type is reported:\n" << reporter.Dump();
      } else {
        EXPECT_TRUE(reported) << "a type the row does not accept is taken silently";
      }
    }
  }
}

}  // namespace
}  // namespace vmetrics
