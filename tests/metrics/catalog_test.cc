// SPDX-License-Identifier: Apache-2.0
// The connector catalog is data: one test walks every built-in row through register, decode,
// record and render, so a row without a fixture (or a fixture that records nothing) fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "tests/metrics/test_util.h"
#include "vmetrics/connector_catalog.h"

namespace vmetrics {
namespace {

using testing::RecordFixture;
using testing::Render;

// Row id -> the Python-encoded fixture that exercises it. A new row needs a line here.
const std::map<std::string, std::string>& FixtureForRow() {
  static const std::map<std::string, std::string> m = {
      {"MooncakeConnector", "kv_mooncake_p2p.msgpack"},
      {"NixlConnector", "kv_nixl.msgpack"},
      {"MooncakeStoreConnector", "kv_mooncake_store.msgpack"},
      {"OffloadingConnector", "kv_offloading.msgpack"},
      {"HF3FSKVConnector", "kv_hf3fs.msgpack"},
      {"HiSparseConnector", "kv_hisparse.msgpack"},
      // MoRIIO's payload has NIXL's keys; the configured connector decides.
      {"MoRIIOConnector", "kv_nixl.msgpack"},
      // LMCache registers no families (Python's observe is a no-op): any map records nothing.
      {"LMCacheConnectorV1", "kv_hisparse.msgpack"},
  };
  return m;
}

// A configuration under which every registration gate of `row` is open, so that every family
// of the row is declared: per key, a value every gate on that key allows.
std::vector<std::pair<std::string, std::string>> OpeningStrings(const ConnectorRow& row) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const MetricDef& m : row.metrics) {
    for (const ExtraConfigGate& g : m.registered_when) {
      if (g.int_at_least) continue;
      for (const std::string& v : g.values) {
        const bool everywhere = std::ranges::all_of(row.metrics, [&](const MetricDef& other) {
          return std::ranges::all_of(other.registered_when, [&](const ExtraConfigGate& h) {
            return h.key != g.key || h.int_at_least || h.Open(v);
          });
        });
        if (everywhere &&
            std::ranges::none_of(out, [&](const auto& e) { return e.first == g.key; }))
          out.emplace_back(g.key, v);
      }
    }
  }
  return out;
}
std::vector<std::pair<std::string, int64_t>> OpeningInts(const ConnectorRow& row) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const MetricDef& m : row.metrics) {
    for (const ExtraConfigGate& g : m.registered_when) {
      if (g.int_at_least) out.emplace_back(g.key, *g.int_at_least);
    }
  }
  return out;
}

TEST(ConnectorCatalog, EveryBuiltInRowRegistersDecodesRecordsAndRenders) {
  for (const auto& row : ConnectorCatalog::BuiltIn().rows()) {
    SCOPED_TRACE(row->id);
    ASSERT_TRUE(ValidateRow(*row).ok()) << ValidateRow(*row).ToString();
    auto it = FixtureForRow().find(row->id);
    ASSERT_NE(it, FixtureForRow().end()) << "row " << row->id << " has no fixture";
    Registry reg;
    RecorderOptions o;
    o.served_model_name = "m";
    o.log = [](const std::string&) {};
    o.connectors.connector = row->id;
    o.connectors.extra_config.emplace_back(row->id, OpeningStrings(*row));
    o.connectors.extra_config_ints.emplace_back(row->id, OpeningInts(*row));
    StatsRecorder rec(&reg, o);
    RecordFixture(rec, it->second);
    const std::string text = Render(reg);
    EXPECT_HAS_LINE(text, "vmetrics_kv_connector_payloads_total{connector=\"" + row->id +
                              "\",outcome=\"recorded\"} 1.0");
    for (const MetricDef& m : row->metrics) {
      const std::string exposed = m.type == MetricType::kCounter ? m.name + "_total" : m.name;
      EXPECT_NE(text.find("# TYPE " + exposed + " " + MetricTypeName(m.type)), std::string::npos)
          << exposed;
    }
    if (!row->metrics.empty()) {
      // At least one family holds a non-zero value from the fixture.
      bool nonzero = false;
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);) {
        if (line.rfind(row->metrics[0].name.substr(0, 10), 0) == 0 &&
            line.find("_created") == std::string::npos &&
            line.find("bucket") == std::string::npos && line.back() != '#' &&
            line.substr(line.rfind(' ') + 1) != "0.0") {
          nonzero = true;
        }
      }
      EXPECT_TRUE(nonzero) << "fixture " << it->second << " recorded nothing for " << row->id
                           << "\n"
                           << text;
    }
  }
}

TEST(ConnectorCatalog, InferenceOrderIsP2pThenNixlThenStoreThenOffloading) {
  const auto& rows = ConnectorCatalog::BuiltIn().rows();
  ASSERT_GE(rows.size(), 4u);
  EXPECT_EQ(rows[0]->id, "MooncakeConnector");
  EXPECT_EQ(rows[1]->id, "NixlConnector");
  EXPECT_EQ(rows[2]->id, "MooncakeStoreConnector");
  EXPECT_EQ(rows[3]->id, "OffloadingConnector");
}

TEST(ConnectorCatalog, NixlSubclassesAnswerToTheNixlRow) {
  const ConnectorCatalog& c = ConnectorCatalog::BuiltIn();
  EXPECT_EQ(c.FindByClassName("NixlPullConnector")->id, "NixlConnector");
  EXPECT_EQ(c.FindByClassName("NixlPushConnector")->id, "NixlConnector");
  EXPECT_EQ(c.FindByClassName("SomethingElse"), nullptr);
}

ConnectorRow OneMetricRow(MetricType type, SampleKind kind, std::vector<double> buckets) {
  ConnectorRow r;
  r.id = "X";
  MetricDef m;
  m.name = "vllm:x";
  m.type = type;
  m.sample_kind = kind;
  m.samples_path = "x";
  m.buckets = std::move(buckets);
  r.metrics.push_back(m);
  return r;
}

TEST(ValidateRow, RejectsCounterFedByObserveKind) {
  EXPECT_FALSE(
      ValidateRow(OneMetricRow(MetricType::kCounter, SampleKind::kObserveEachF64, {})).ok());
}
TEST(ValidateRow, RejectsGaugeFedByIncKind) {
  EXPECT_FALSE(ValidateRow(OneMetricRow(MetricType::kGauge, SampleKind::kIncByU64, {})).ok());
}
TEST(ValidateRow, RejectsHistogramWithoutBuckets) {
  EXPECT_FALSE(
      ValidateRow(OneMetricRow(MetricType::kHistogram, SampleKind::kObserveEachF64, {})).ok());
}
TEST(ValidateRow, RejectsBucketsOutOfOrder) {
  EXPECT_FALSE(
      ValidateRow(OneMetricRow(MetricType::kHistogram, SampleKind::kObserveEachF64, {2, 1})).ok());
}
TEST(ValidateRow, RejectsEmptyId) {
  ConnectorRow r = OneMetricRow(MetricType::kCounter, SampleKind::kIncByU64, {});
  r.id.clear();
  EXPECT_FALSE(ValidateRow(r).ok());
}
TEST(ValidateRow, AcceptsAWellFormedHistogram) {
  EXPECT_TRUE(
      ValidateRow(OneMetricRow(MetricType::kHistogram, SampleKind::kObserveEachF64, {1, 2})).ok());
}

}  // namespace
}  // namespace vmetrics
