// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/connector_payloads.cc: kv_connector_stats split into payloads as the
// configuration and the wire name them, with no catalog: the configured connector's payload,
// a configured MultiConnector's children by key (unwrapped, malformed ones reported), or the
// whole map, unnamed, when nothing is configured. Which row each payload records with is
// tested with identification (tests/metrics/connector_identification_test.cc).
#include "vmetrics/internal/connector_payloads.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::MapKeys;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::RecordingReporter;
using ::vmetrics::testing::ViewsInto;

struct Split {
  std::string data;
  RecordingReporter reporter;
  DecodeContext ctx;
  EngineCoreOutputs out;

  const KvConnectorStats& kv() const { return *out.scheduler_stats->kv_connector_stats; }
  const ConnectorPayload& payload(size_t i) const { return kv().payloads.at(i); }
};

std::unique_ptr<Split> SplitFixture(std::string_view name,
                                    const ConnectorConfig* config = nullptr) {
  auto s = std::make_unique<Split>();
  s->data = ReadFixture(name);
  s->ctx.connectors = config;
  s->ctx.reporter = &s->reporter;
  s->ctx.message_number = 1;
  const Status status = DecodeOne(s->data, s->ctx, &s->out);
  EXPECT_TRUE(status.ok()) << name << ": " << status.ToString();
  EXPECT_TRUE(s->out.scheduler_stats && s->out.scheduler_stats->kv_connector_stats) << name;
  return s;
}

TEST(ConnectorPayloads, NothingConfiguredHandsOutTheWholeMapUnnamed) {
  for (const char* fixture :
       {"kv_nixl", "kv_mooncake_store", "kv_hf3fs", "kv_multi_offloading_hf3fs_hisparse"}) {
    SCOPED_TRACE(fixture);
    auto s = SplitFixture(fixture);
    ASSERT_EQ(s->kv().payloads.size(), 1u);
    const ConnectorPayload& p = s->payload(0);
    EXPECT_EQ(p.named_by, PayloadNamedBy::kNothing);
    EXPECT_EQ(p.connector, "");
    EXPECT_FALSE(p.malformed);
    EXPECT_FALSE(s->kv().multi) << "only a configured MultiConnector is split here";
    EXPECT_EQ(p.payload, s->kv().raw);
    EXPECT_TRUE(ViewsInto(p.payload, s->data));
    EXPECT_TRUE(s->reporter.problems.empty()) << s->reporter.Dump();
  }
}

TEST(ConnectorPayloads, AnUnnamedMapKeepsItsOwnDescriptor) {
  auto s = SplitFixture("kv_bare_descriptor");
  ASSERT_EQ(s->kv().payloads.size(), 1u);
  EXPECT_THAT(MapKeys(s->payload(0).descriptor),
              ElementsAre("descriptor_version", "connector_id", "metrics"));
  EXPECT_TRUE(ViewsInto(s->payload(0).descriptor, s->payload(0).payload));
}

TEST(ConnectorPayloads, TheConfiguredConnectorNamesTheWholeMap) {
  const ConnectorConfig config{"P2pNcclConnector", {}};
  auto s = SplitFixture("kv_nixl", &config);
  ASSERT_EQ(s->kv().payloads.size(), 1u);
  EXPECT_EQ(s->payload(0).named_by, PayloadNamedBy::kConfigured);
  EXPECT_EQ(s->payload(0).connector, "P2pNcclConnector") << "any name: no catalog here";
  EXPECT_EQ(s->payload(0).payload, s->kv().raw);
  EXPECT_TRUE(s->payload(0).descriptor.empty());
}

TEST(ConnectorPayloads, AConfiguredMultiConnectorIsSplitByChildKey) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector", "MooncakeStoreConnector"}};
  auto s = SplitFixture("kv_multi_data_wrapped", &config);
  EXPECT_TRUE(s->kv().multi);
  ASSERT_EQ(s->kv().payloads.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const ConnectorPayload& p = s->payload(i);
    EXPECT_EQ(p.named_by, PayloadNamedBy::kMultiChildKey);
    EXPECT_TRUE(p.data_wrapped) << "the {\"data\": {...}} wrapper is taken off";
    EXPECT_FALSE(p.malformed);
    EXPECT_EQ(p.payload.data(), s->data.data() + p.payload_offset);
    EXPECT_TRUE(ViewsInto(p.payload, s->kv().raw));
  }
  EXPECT_EQ(s->payload(0).connector, "NixlConnector");
  EXPECT_EQ(s->payload(1).connector, "MooncakeStoreConnector");
  EXPECT_THAT(MapKeys(s->payload(1).payload), ElementsAre("load_get", "save_put", "lookup_exists"));
}

TEST(ConnectorPayloads, AChildThatIsNotAMapIsMalformedAndReportedItsSiblingsStay) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector", "MooncakeStoreConnector"}};
  auto s = SplitFixture("kv_multi_child_not_a_map", &config);
  ASSERT_EQ(s->kv().payloads.size(), 2u);
  EXPECT_FALSE(s->payload(0).malformed);
  EXPECT_TRUE(s->payload(1).malformed);
  EXPECT_EQ(s->payload(1).connector, "MooncakeStoreConnector");
  EXPECT_EQ(s->payload(1).payload, std::string_view("\x92\x01\x02", 3));
  ASSERT_EQ(s->reporter.problems.size(), 1u) << s->reporter.Dump();
  EXPECT_EQ(s->reporter.problems[0].what, "MultiConnector child must be a map, got array");
}

TEST(ConnectorPayloads, ChildDescriptorsAreFoundWhileSplitting) {
  const ConnectorConfig config{"MultiConnector", {"NixlPullConnector", "AcmeConnector"}};
  auto s = SplitFixture("kv_multi_descriptor", &config);
  ASSERT_EQ(s->kv().payloads.size(), 2u);
  EXPECT_TRUE(s->payload(0).descriptor.empty());
  EXPECT_THAT(MapKeys(s->payload(1).descriptor),
              ElementsAre("descriptor_version", "connector_id", "metrics"));
}

TEST(ConnectorPayloads, AValueThatIsNotAMapIsOneMalformedPayload) {
  auto s = SplitFixture("kv_not_a_map");
  ASSERT_EQ(s->kv().payloads.size(), 1u);
  EXPECT_TRUE(s->payload(0).malformed);
  EXPECT_EQ(s->payload(0).connector, "unknown");
  EXPECT_EQ(s->payload(0).named_by, PayloadNamedBy::kNothing);
  EXPECT_FALSE(s->reporter.problems.empty());
  const ConnectorConfig config{"NixlConnector", {}};
  auto c = SplitFixture("kv_not_a_map", &config);
  ASSERT_EQ(c->kv().payloads.size(), 1u);
  EXPECT_TRUE(c->payload(0).malformed);
  EXPECT_EQ(c->payload(0).connector, "NixlConnector");
}

TEST(ConnectorPayloads, AnEmptyMapCarriesNoPayload) {
  auto s = SplitFixture("kv_empty_map");
  EXPECT_THAT(s->kv().payloads, IsEmpty());
  EXPECT_EQ(s->kv().raw, std::string_view("\x80", 1));
}

TEST(ConnectorPayloads, EntriesAreScannedOnceWithTheirChildDescriptors) {
  const std::string data = ReadFixture("kv_multi_descriptor");
  EngineCoreOutputs out;
  ASSERT_TRUE(DecodeOne(data, DecodeContext{}, &out).ok());
  const KvConnectorStats& kv = *out.scheduler_stats->kv_connector_stats;
  protocol::MsgpackReader r(kv.raw);
  std::vector<internal::PayloadEntry> entries;
  ASSERT_TRUE(internal::ScanPayloadEntries(r, &entries).ok());
  EXPECT_TRUE(r.at_end()) << "the reader is left after the map";
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key, "NixlPullConnector");
  EXPECT_TRUE(entries[0].child_scanned);
  EXPECT_TRUE(entries[0].child_descriptor.empty());
  EXPECT_TRUE(internal::MapHasKey(entries[1].value, kMetricsDescriptorKey));
  EXPECT_FALSE(entries[1].child_descriptor.empty());
  EXPECT_EQ(internal::FindEntry(entries, "AcmeConnector"), &entries[1]);
  EXPECT_EQ(internal::FindEntry(entries, "Other"), nullptr);
  const ConnectorPayload child = internal::MultiChildPayload(entries[1], DecodeContext{});
  EXPECT_EQ(child.connector, "AcmeConnector");
  EXPECT_EQ(child.descriptor, entries[1].child_descriptor);
}

}  // namespace
}  // namespace vmetrics
