// SPDX-License-Identifier: Apache-2.0
// Tests of src/metrics/connector_catalog.cc: the built-in rows (inference order, class names,
// validity) and ValidateRow / AddRow, one test per kind of rejection.
#include "vmetrics/connector_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vmetrics {
namespace {

using ::testing::ElementsAre;

// docs/design.md §3.2: with no connector configured a bare payload is matched in this order. The
// order is written down once in connector_catalog.cc; this test fails if it changes.
TEST(ConnectorCatalog, BuiltInShapeRulesAreInInferenceOrder) {
  std::vector<std::string> order;
  for (const auto& row : ConnectorCatalog::BuiltIn().rows()) {
    if (row->shape_rule != ShapeRule::kNever) order.push_back(row->id);
  }
  EXPECT_THAT(order, ElementsAre("MooncakeConnector", "NixlConnector", "MooncakeStoreConnector",
                                 "OffloadingConnector"));
  const ConnectorCatalog& c = ConnectorCatalog::BuiltIn();
  EXPECT_EQ(c.FindByClassName("MooncakeConnector")->shape_key, "num_failed_recvs");
  EXPECT_EQ(c.FindByClassName("NixlConnector")->shape_key, "post_duration");
  EXPECT_EQ(c.FindByClassName("MooncakeStoreConnector")->shape_rule, ShapeRule::kOperationRecords);
  EXPECT_EQ(c.FindByClassName("OffloadingConnector")->shape_rule, ShapeRule::kTypedPayload);
}

TEST(ConnectorCatalog, EveryBuiltInRowValidates) {
  for (const auto& row : ConnectorCatalog::BuiltIn().rows()) {
    Status s = ValidateRow(*row);
    EXPECT_TRUE(s.ok()) << row->id << ": " << s.ToString();
    EXPECT_TRUE(row->builtin) << row->id;
  }
}

TEST(ConnectorCatalog, NixlSubclassesAnswerToTheNixlRow) {
  const ConnectorCatalog& c = ConnectorCatalog::BuiltIn();
  for (const char* name : {"NixlConnector", "NixlPullConnector", "NixlPushConnector"}) {
    ASSERT_NE(c.FindByClassName(name), nullptr) << name;
    EXPECT_EQ(c.FindByClassName(name)->id, "NixlConnector") << name;
  }
  EXPECT_EQ(c.FindByClassName("MultiConnector"), nullptr) << "Multi is a container, not a row";
  EXPECT_EQ(c.FindByClassName("UnsupportedConnector"), nullptr);
  EXPECT_EQ(c.FindByClassName(""), nullptr);
}

TEST(ConnectorCatalog, NixlDescriptorHelpKeepsUpstreamsDoubleSpace) {
  const ConnectorRow* nixl = ConnectorCatalog::BuiltIn().FindByClassName("NixlConnector");
  ASSERT_NE(nixl, nullptr);
  ASSERT_EQ(nixl->metrics.size(), 7u);
  EXPECT_EQ(nixl->metrics[3].name, "vllm:nixl_num_descriptors");
  EXPECT_EQ(nixl->metrics[3].documentation,
            "Histogram of number of descriptors per NIXL  KV Cache transfers.");
}

TEST(ConnectorCatalog, MooncakeStoreRowIsRecordShapedWithOperationAndStatusLabels) {
  const ConnectorRow* store = ConnectorCatalog::BuiltIn().FindByClassName("MooncakeStoreConnector");
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->record_shaped());
  EXPECT_THAT(store->ExtraLabelNames(), ElementsAre("operation", "status"));
  EXPECT_EQ(store->children, ChildCreation::kOnFirstRecord);
}

TEST(ConnectorCatalog, KnownStoreOperations) {
  for (const char* op : {"save_exists", "save_put", "load_get", "lookup_exists"}) {
    EXPECT_TRUE(IsKnownStoreOperation(op)) << op;
  }
  EXPECT_FALSE(IsKnownStoreOperation("transfer_duration"));
  EXPECT_FALSE(IsKnownStoreOperation(""));
}

TEST(ConnectorCatalog, SampleKindNamesRoundTrip) {
  for (SampleKind k :
       {SampleKind::kIncByU64, SampleKind::kIncBySumU64, SampleKind::kIncByF64, SampleKind::kSetU64,
        SampleKind::kSetF64, SampleKind::kObserveEachF64, SampleKind::kObserveEachU64AsF64}) {
    SampleKind parsed = SampleKind::kIncByOne;
    ASSERT_TRUE(ParseSampleKind(SampleKindName(k), &parsed)) << SampleKindName(k);
    EXPECT_EQ(parsed, k);
  }
  SampleKind unused;
  EXPECT_FALSE(ParseSampleKind("observe_each", &unused));
}

ConnectorRow GoodRow() {
  ConnectorRow row;
  row.id = "AcmeConnector";
  row.class_names = {"AcmeConnector"};
  row.builtin = false;
  MetricDef m;
  m.name = "vllm:acme_latency_seconds";
  m.type = MetricType::kHistogram;
  m.documentation = "Acme latency.";
  m.buckets = {0.1, 1.0};
  m.samples_path = "latency";
  m.sample_kind = SampleKind::kObserveEachF64;
  row.metrics.push_back(m);
  return row;
}

TEST(ValidateRow, AcceptsAWellFormedRow) { EXPECT_TRUE(ValidateRow(GoodRow()).ok()); }

TEST(ValidateRow, RejectsAnEmptyId) {
  ConnectorRow row = GoodRow();
  row.id.clear();
  EXPECT_FALSE(ValidateRow(row).ok());
}

TEST(ValidateRow, RejectsASampleKindThatDoesNotFitTheType) {
  ConnectorRow row = GoodRow();
  row.metrics[0].sample_kind = SampleKind::kIncBySumU64;  // counter kind on a histogram
  EXPECT_FALSE(ValidateRow(row).ok());
  ConnectorRow gauge = GoodRow();
  gauge.metrics[0].type = MetricType::kGauge;
  gauge.metrics[0].buckets.clear();
  EXPECT_FALSE(ValidateRow(gauge).ok()) << "observe kind on a gauge";
}

TEST(ValidateRow, RejectsAHistogramWithoutBuckets) {
  ConnectorRow row = GoodRow();
  row.metrics[0].buckets.clear();
  EXPECT_FALSE(ValidateRow(row).ok());
}

TEST(ValidateRow, RejectsBucketsThatAreNotStrictlyAscending) {
  ConnectorRow row = GoodRow();
  row.metrics[0].buckets = {1.0, 0.1};
  EXPECT_FALSE(ValidateRow(row).ok());
  row.metrics[0].buckets = {0.1, 0.1};
  EXPECT_FALSE(ValidateRow(row).ok());
}

TEST(ValidateRow, RejectsBucketsOnACounter) {
  ConnectorRow row = GoodRow();
  row.metrics[0].type = MetricType::kCounter;
  row.metrics[0].sample_kind = SampleKind::kIncBySumU64;
  EXPECT_FALSE(ValidateRow(row).ok());
}

TEST(ValidateRow, RejectsAnEmptyNameOrPath) {
  ConnectorRow row = GoodRow();
  row.metrics[0].name.clear();
  EXPECT_FALSE(ValidateRow(row).ok());
  ConnectorRow path = GoodRow();
  path.metrics[0].samples_path.clear();
  EXPECT_FALSE(ValidateRow(path).ok());
}

TEST(ValidateRow, RejectsIncByOneOutsideRecordShapedRows) {
  ConnectorRow row = GoodRow();
  row.metrics[0].type = MetricType::kCounter;
  row.metrics[0].buckets.clear();
  row.metrics[0].sample_kind = SampleKind::kIncByOne;
  row.metrics[0].samples_path.clear();
  EXPECT_FALSE(ValidateRow(row).ok());
}

TEST(ConnectorCatalog, AddRowAppendsAValidRow) {
  ConnectorCatalog c = ConnectorCatalog::BuiltIn();
  const size_t before = c.rows().size();
  ASSERT_TRUE(c.AddRow(GoodRow()).ok());
  EXPECT_EQ(c.rows().size(), before + 1);
  ASSERT_NE(c.FindByClassName("AcmeConnector"), nullptr);
  EXPECT_EQ(ConnectorCatalog::BuiltIn().FindByClassName("AcmeConnector"), nullptr)
      << "the built-in catalog is not changed by a copy";
}

TEST(ConnectorCatalog, AddRowRejectsAClassNameThatExists) {
  ConnectorCatalog c = ConnectorCatalog::BuiltIn();
  ConnectorRow row = GoodRow();
  row.id = "NixlPullConnector";
  row.class_names = {"NixlPullConnector"};
  EXPECT_FALSE(c.AddRow(row).ok());
}

TEST(ConnectorCatalog, AddRowRejectsAFamilyOfAnotherConnector) {
  ConnectorCatalog c = ConnectorCatalog::BuiltIn();
  ConnectorRow row = GoodRow();
  row.metrics[0].name = "vllm:nixl_xfer_time_seconds";
  EXPECT_FALSE(c.AddRow(row).ok());
}

TEST(ConnectorCatalog, AddRowRejectsAnInvalidRow) {
  ConnectorCatalog c;
  ConnectorRow row = GoodRow();
  row.metrics[0].buckets.clear();
  EXPECT_FALSE(c.AddRow(row).ok());
  EXPECT_TRUE(c.rows().empty());
}

}  // namespace
}  // namespace vmetrics
