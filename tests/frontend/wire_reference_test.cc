// SPDX-License-Identifier: Apache-2.0
// Tests of src/offline/wire_reference.cc: the generated wire-layout tables say what the
// wire-generation tables say, and SpliceWireReference refuses a document whose markers are
// broken instead of writing a half-generated one.
#include "vmetrics/offline/wire_reference.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {
namespace {

std::string Markers(std::string_view name, std::string_view inside = "") {
  return "<!-- BEGIN GENERATED wire-reference " + std::string(name) + " -->\n" +
         std::string(inside) + "<!-- END GENERATED wire-reference " + std::string(name) + " -->\n";
}

// Every block's markers, with `inside` between each pair.
std::string AllMarkers(std::string_view inside = "") {
  std::string doc;
  for (const WireReferenceBlock& b : WireReferenceBlocks()) doc += Markers(b.name, inside);
  return doc;
}

const WireReferenceBlock& BlockNamed(std::string_view name) {
  static const std::vector<WireReferenceBlock> blocks = WireReferenceBlocks();
  for (const WireReferenceBlock& b : blocks) {
    if (b.name == name) return b;
  }
  ADD_FAILURE() << "no block " << name;
  return blocks.front();
}

TEST(WireReference, SpliceReplacesWhatIsBetweenTheMarkersAndKeepsTheRest) {
  const std::string doc =
      "# Title\n\nprose before\n" + AllMarkers("| stale | table |\n") + "prose after\n";
  Result<std::string> spliced = SpliceWireReference(doc);
  ASSERT_TRUE(spliced.ok()) << spliced.status().ToString();
  EXPECT_EQ(spliced->find("stale"), std::string::npos) << *spliced;
  EXPECT_EQ(spliced->rfind("# Title\n\nprose before\n<!-- BEGIN GENERATED", 0), 0u) << *spliced;
  EXPECT_NE(spliced->find("-->\nprose after\n"), std::string::npos) << *spliced;
  for (const WireReferenceBlock& b : WireReferenceBlocks()) {
    EXPECT_NE(spliced->find(Markers(b.name, b.markdown)), std::string::npos) << b.name;
  }
  // Splicing the result again changes nothing.
  Result<std::string> again = SpliceWireReference(*spliced);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *spliced);
}

TEST(WireReference, SpliceRefusesBrokenMarkers) {
  const std::string all = AllMarkers();
  const std::string first = WireReferenceBlocks().front().name;
  const std::string begin = "<!-- BEGIN GENERATED wire-reference " + first + " -->\n";
  const std::string end = "<!-- END GENERATED wire-reference " + first + " -->\n";
  const struct {
    std::string what;
    std::string doc;
  } cases[] = {
      {"a block without markers", all.substr(all.find(end) + end.size())},
      {"a block twice", all + Markers(first)},
      {"a block that does not exist", all + Markers("no-such-block")},
      {"a BEGIN without its END",
       all.substr(0, all.find(end)) + all.substr(all.find(end) + end.size())},
      {"an END without its BEGIN", end + all.substr(begin.size())},
  };
  for (const auto& c : cases) {
    Result<std::string> spliced = SpliceWireReference(c.doc);
    EXPECT_FALSE(spliced.ok()) << c.what;
  }
}

TEST(WireReference, SchedulerStatsTableHasEveryKeyAtItsPositionInEachGeneration) {
  const std::string& table = BlockNamed("scheduler-stats").markdown;
  // g20260712 has num_skipped_waiting_reqs at 2 and no encoder_cache_usage; g20260204 and
  // g20260413 share a column, with encoder_cache_usage at 5.
  EXPECT_NE(table.find("| g20260204, g20260413 |"), std::string::npos) << table;
  for (const StatsKeyRow& row : kStatsKeyRows) {
    EXPECT_NE(table.find("| `" + std::string(row.name) + "` |"), std::string::npos) << row.name;
  }
  const WireGeneration* g = FindWireGeneration("g20260712");
  ASSERT_NE(g, nullptr);
  ASSERT_GE(g->scheduler_stats_keys.size(), 3u);
  EXPECT_EQ(g->scheduler_stats_keys[2], StatsKey::kNumSkippedWaitingReqs);
  EXPECT_NE(table.find("| `encoder_cache_usage` | float | int, float | skipped | | | | 5 | | | |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| keys | | | | 9 | 10 | 14 | 15 | 15 | 16 | 18 |"), std::string::npos)
      << table;
}

TEST(WireReference, JsonListsEachGenerationsKeysInOrder) {
  const std::string json = WireLayoutsJson();
  for (const WireGeneration& g : WireGenerations()) {
    std::string keys = "\"scheduler_stats_keys\": [";
    for (size_t i = 0; i < g.scheduler_stats_keys.size(); ++i) {
      keys += (i == 0 ? "\n        \"" : ",\n        \"") +
              std::string(StatsKeyName(g.scheduler_stats_keys[i])) + "\"";
    }
    EXPECT_NE(json.find(keys), std::string::npos) << g.name << "\n" << keys;
  }
  EXPECT_EQ(json.back(), '\n');
}

}  // namespace
}  // namespace vmetrics::frontend
