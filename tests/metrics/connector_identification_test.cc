// SPDX-License-Identifier: Apache-2.0
// Tests of src/metrics/connector_identification.cc: which connector row each kv_connector_stats
// payload is tied to (configured, MultiConnector child key, inferred shape, unknown, malformed),
// and every row of the Rust frontend's decision table with the outcome OUR rules give
// (docs/recording.md). Decoding only splits the payloads (tests/protocol/
// connector_payloads_test.cc); the fixtures are decoded, then identified.
#include "vmetrics/connector_identification.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/metrics/connector_fixture.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::vmetrics::testing::AcmeRow;
using ::vmetrics::testing::Decoded;
using ::vmetrics::testing::DecodeFixture;
using ::vmetrics::testing::Identified;
using ::vmetrics::testing::MapKeys;
using ::vmetrics::testing::Payload;

// What one payload must look like. `row` "" means no row (unknown connector or malformed).
struct Want {
  std::string connector;
  std::string row;
  IdentifiedBy by;
  bool wrapped = false;
  bool malformed = false;
};

constexpr IdentifiedBy kConfigured = IdentifiedBy::kConfigured;
constexpr IdentifiedBy kChildKey = IdentifiedBy::kMultiChildKey;
constexpr IdentifiedBy kInferred = IdentifiedBy::kInferredShape;
constexpr IdentifiedBy kNone = IdentifiedBy::kNone;

void ExpectPayloads(const Decoded& d, bool multi, const std::vector<Want>& want) {
  if (!d.status.ok() || !d.out.scheduler_stats || !d.out.scheduler_stats->kv_connector_stats) {
    ADD_FAILURE() << "nothing decoded";
    return;
  }
  const IdentifiedPayloads& ids = d.ids;
  EXPECT_EQ(ids.multi, multi);
  EXPECT_TRUE(testing::ViewsInto(d.kv().raw, d.data)) << "raw is a view into frame 0";
  ASSERT_EQ(ids.payloads.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const IdentifiedPayload& id = ids.payloads[i];
    const ConnectorPayload& p = id.payload;
    const Want& w = want[i];
    SCOPED_TRACE("payload " + std::to_string(i) + " (" + w.connector + ")");
    EXPECT_EQ(p.connector, w.connector);
    if (w.row.empty()) {
      EXPECT_EQ(id.row, nullptr) << "got row " << (id.row ? id.row->id : "");
    } else {
      ASSERT_NE(id.row, nullptr);
      EXPECT_EQ(id.row->id, w.row);
    }
    EXPECT_EQ(id.identified_by, w.by)
        << IdentifiedByName(id.identified_by) << " vs " << IdentifiedByName(w.by);
    EXPECT_EQ(std::string(id.outcome), w.malformed     ? kOutcomeMalformed
                                       : w.row.empty() ? kOutcomeUnknownConnector
                                                       : kOutcomeRecorded);
    EXPECT_EQ(p.data_wrapped, w.wrapped);
    EXPECT_EQ(p.malformed, w.malformed);
    // The payload is a view into frame 0 at payload_offset.
    EXPECT_EQ(p.payload.data(), d.data.data() + p.payload_offset);
    EXPECT_TRUE(testing::ViewsInto(p.payload, d.kv().raw))
        << "the payload lies inside the raw stats";
    if (!w.malformed) {
      ASSERT_FALSE(p.payload.empty());
      EXPECT_EQ(static_cast<uint8_t>(p.payload[0]) & 0xf0, 0x80) << "a (fix)map payload";
    }
  }
}

// --- One payload per built-in connector, no connector configured ---------------------------

TEST(ConnectorIdentification, BareNixlIsInferredFromPostDuration) {
  auto d = DecodeFixture("kv_nixl");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
  EXPECT_THAT(
      MapKeys(Payload(*d, 0).payload),
      ElementsAre("transfer_duration", "post_duration", "bytes_transferred", "num_descriptors",
                  "num_failed_transfers", "num_failed_notifications", "num_kv_expired_reqs"));
  EXPECT_EQ(Payload(*d, 0).payload, d->kv().raw) << "a bare payload is the whole value";
  EXPECT_TRUE(Payload(*d, 0).descriptor.empty());
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ConnectorIdentification, BareMooncakeStoreIsInferredFromOperationKeys) {
  auto d = DecodeFixture("kv_mooncake_store");
  ExpectPayloads(*d, false, {{"MooncakeStoreConnector", "MooncakeStoreConnector", kInferred}});
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ElementsAre("load_get"));
}

TEST(ConnectorIdentification, BareMooncakeStoreWithDefaultedRecordFieldsIsStillTheStore) {
  auto d = DecodeFixture("kv_mooncake_store_defaults");
  ExpectPayloads(*d, false, {{"MooncakeStoreConnector", "MooncakeStoreConnector", kInferred}});
}

TEST(ConnectorIdentification, BareMooncakeP2pIsInferredFromNumFailedRecvsWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_mooncake_p2p");
  ExpectPayloads(*d, false, {{"MooncakeConnector", "MooncakeConnector", kInferred}});
}

TEST(ConnectorIdentification, BareOffloadingTypedPayloadIsInferredFromTypesAndData) {
  auto d = DecodeFixture("kv_offloading");
  ExpectPayloads(*d, false, {{"OffloadingConnector", "OffloadingConnector", kInferred}});
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ElementsAre("types", "data", "info"));
}

TEST(ConnectorIdentification, BareHf3fsPayloadIsUnknownWithoutConfig) {
  auto d = DecodeFixture("kv_hf3fs");
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  EXPECT_FALSE(Payload(*d, 0).connector.empty()) << "accounted under some connector label";
  ExpectPayloads(*d, false, {{std::string(Payload(*d, 0).connector), "", kNone}});
  EXPECT_FALSE(Payload(*d, 0).malformed);
  EXPECT_FALSE(d->reporter.problems.empty()) << "an unknown connector is reported";
}

TEST(ConnectorIdentification, BareHf3fsPayloadIsHf3fsWhenConfigured) {
  const ConnectorConfig config{"HF3FSKVConnector", {}};
  auto d = DecodeFixture("kv_hf3fs", &config);
  ExpectPayloads(*d, false, {{"HF3FSKVConnector", "HF3FSKVConnector", kConfigured}});
}

TEST(ConnectorIdentification, BareHiSparsePayloadIsHiSparseWhenConfigured) {
  const ConnectorConfig config{"HiSparseConnector", {}};
  auto d = DecodeFixture("kv_hisparse", &config);
  ExpectPayloads(*d, false, {{"HiSparseConnector", "HiSparseConnector", kConfigured}});
}

TEST(ConnectorIdentification, BareHiSparsePayloadIsUnknownWithoutConfig) {
  auto d = DecodeFixture("kv_hisparse");
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  EXPECT_EQ(Identified(*d, 0).row, nullptr);
  EXPECT_EQ(Identified(*d, 0).identified_by, kNone);
  EXPECT_FALSE(Payload(*d, 0).malformed);
  EXPECT_FALSE(d->ids.multi) << "flat lists are not MultiConnector children";
}

// --- The Rust frontend's decision table (docs/design.md §3.1), row by row --------

// Row 1: "NIXL map with the 7 keys -> Nixl". Same here.
TEST(ConnectorIdentification, DecisionTableNixlWithSevenKeysIsNixlAsInRust) {
  auto d = DecodeFixture("kv_nixl");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
}

// Row 2: "{} -> Mooncake with empty map (records nothing)". Ours: no payload at all.
TEST(ConnectorIdentification,
     DecisionTableEmptyMapCarriesNoPayloadWhereRustTookItForMooncakeStore) {
  auto d = DecodeFixture("kv_empty_map");
  EXPECT_FALSE(d->ids.multi);
  EXPECT_THAT(d->ids.payloads, IsEmpty());
  EXPECT_EQ(d->kv().raw, std::string_view("\x80", 1));
}

// Row 3: "Mooncake store map -> Mooncake". Same here.
TEST(ConnectorIdentification, DecisionTableMooncakeStoreIsTheStoreAsInRust) {
  auto d = DecodeFixture("kv_mooncake_store");
  ExpectPayloads(*d, false, {{"MooncakeStoreConnector", "MooncakeStoreConnector", kInferred}});
}

// Row 4a: "NIXL map with an extra key -> Multi with everything in other -> NIXL silently not
// recorded". Ours: NIXL (extra keys are ignored).
TEST(ConnectorIdentification, NixlWithExtraKeyIsStillNixlWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_nixl_extra_keys");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
  EXPECT_EQ(MapKeys(Payload(*d, 0).payload).size(), 9u);
}

// Row 4b: "... or a missing key -> dropped". Ours: NIXL while post_duration is there.
TEST(ConnectorIdentification, NixlWithMissingKeyIsStillNixlWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_nixl_missing_key");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
}

// Without its shape key a NIXL payload is not taken for anything else: it is an unknown
// connector (accounted for) unless NIXL is configured.
TEST(ConnectorIdentification, NixlWithoutPostDurationIsUnknownUnlessConfigured) {
  auto d = DecodeFixture("kv_nixl_missing_post_duration");
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  EXPECT_EQ(Identified(*d, 0).row, nullptr);
  EXPECT_EQ(Identified(*d, 0).identified_by, kNone);
  EXPECT_FALSE(Payload(*d, 0).malformed);
  EXPECT_FALSE(d->ids.multi);
  const ConnectorConfig config{"NixlConnector", {}};
  auto c = DecodeFixture("kv_nixl_missing_post_duration", &config);
  ExpectPayloads(*c, false, {{"NixlConnector", "NixlConnector", kConfigured}});
}

// Row 5: "Mooncake P2P payload without a dedicated variant -> Multi/other -> dropped".
// Ours: Mooncake P2P.
TEST(ConnectorIdentification, DecisionTableMooncakeP2pIsMooncakeP2pWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_mooncake_p2p");
  ExpectPayloads(*d, false, {{"MooncakeConnector", "MooncakeConnector", kInferred}});
}

// Row 6: "{NixlConnector: <valid nixl>, X: ...} -> Multi (nixl child recorded, X in other)".
// Same here, and X is an unknown connector (accounted for), not silently kept aside.
TEST(ConnectorIdentification,
     DecisionTableMultiWithUnsupportedChildRecordsTheKnownChildrenAsInRust) {
  auto d = DecodeFixture("kv_multi_unsupported_child");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey},
                  {"UnsupportedConnector", "", kNone}});
  EXPECT_THAT(MapKeys(Payload(*d, 2).payload), ElementsAre("sample_count"));
  EXPECT_THAT(MapKeys(Payload(*d, 1).payload), ElementsAre("load_get"));
  // docs/design.md §3.4: the unknown connector is logged with its name.
  bool reported = false;
  for (const auto& problem : d->reporter.problems) {
    reported |= problem.connector == "UnsupportedConnector" && problem.message_number == 1;
  }
  EXPECT_TRUE(reported) << d->reporter.Dump();
}

// Row 7: "{NixlConnector: <nixl with extra key>} -> Multi fails -> Other -> nothing recorded".
// Ours: a NIXL child.
TEST(ConnectorIdentification, MultiNixlChildWithExtraKeyIsStillNixlWhereRustRecordedNothing) {
  auto d = DecodeFixture("kv_multi_nixl_extra_keys");
  ExpectPayloads(*d, true, {{"NixlConnector", "NixlConnector", kChildKey}});
  EXPECT_EQ(MapKeys(Payload(*d, 0).payload).size(), 9u);
}

// --- MultiConnector children ---------------------------------------------------------------

TEST(ConnectorIdentification, MultiMooncakeP2pChildIsIdentifiedByItsKey) {
  auto d = DecodeFixture("kv_multi_mooncake_p2p");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeConnector", "MooncakeConnector", kChildKey}});
}

TEST(ConnectorIdentification, DataWrappedMultiChildrenAreUnwrapped) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey, /*wrapped=*/true},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey, true}});
  EXPECT_EQ(MapKeys(Payload(*d, 0).payload).size(), 7u) << "the inner NIXL map, not {data: ...}";
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ::testing::Contains("post_duration"));
  EXPECT_THAT(MapKeys(Payload(*d, 1).payload),
              ElementsAre("load_get", "save_put", "lookup_exists"));
}

TEST(ConnectorIdentification, OffloadingChildKeepsItsOwnTopLevelDataKey) {
  auto d = DecodeFixture("kv_multi_offloading_hf3fs_hisparse");
  ExpectPayloads(*d, true,
                 {{"OffloadingConnector", "OffloadingConnector", kChildKey},
                  {"HF3FSKVConnector", "HF3FSKVConnector", kChildKey},
                  {"HiSparseConnector", "HiSparseConnector", kChildKey}});
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ElementsAre("types", "data", "info"))
      << "a typed payload has more keys than 'data': never unwrapped";
}

TEST(ConnectorIdentification, SubclassChildMapsToItsRowAndAThirdPartyChildKeepsItsDescriptor) {
  auto d = DecodeFixture("kv_multi_descriptor");
  ExpectPayloads(*d, true,
                 {{"NixlPullConnector", "NixlConnector", kChildKey}, {"AcmeConnector", "", kNone}});
  EXPECT_TRUE(Payload(*d, 0).descriptor.empty());
  const std::string_view descriptor = Payload(*d, 1).descriptor;
  ASSERT_FALSE(descriptor.empty());
  EXPECT_THAT(MapKeys(descriptor), ElementsAre("descriptor_version", "connector_id", "metrics"));
  EXPECT_TRUE(testing::ViewsInto(descriptor, Payload(*d, 1).payload));
}

TEST(ConnectorIdentification, ARowAddedAtRunTimeIdentifiesItsChild) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(AcmeRow()).ok());
  auto d = DecodeFixture("kv_multi_descriptor", nullptr, &catalog);
  ExpectPayloads(*d, true,
                 {{"NixlPullConnector", "NixlConnector", kChildKey},
                  {"AcmeConnector", "AcmeConnector", kChildKey}});
}

// docs/design.md §3.2: a flat payload's connector is the descriptor's connector_id.
TEST(ConnectorIdentification, BarePayloadWithADescriptorIsNamedByItsConnectorId) {
  auto d = DecodeFixture("kv_hisparse_descriptor");
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  const ConnectorPayload& p = Payload(*d, 0);
  EXPECT_EQ(p.connector, "HiSparseConnector");
  ASSERT_NE(Identified(*d, 0).row, nullptr);
  EXPECT_EQ(Identified(*d, 0).row->id, "HiSparseConnector");
  EXPECT_EQ(Identified(*d, 0).identified_by, kInferred);
  EXPECT_FALSE(p.descriptor.empty());
  EXPECT_FALSE(d->ids.multi);
}

TEST(ConnectorIdentification, BareThirdPartyPayloadKeepsItsDescriptorForTheRecorder) {
  auto d = DecodeFixture("kv_bare_descriptor");
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  const ConnectorPayload& p = Payload(*d, 0);
  EXPECT_EQ(p.connector, "AcmeConnector");
  EXPECT_EQ(Identified(*d, 0).row, nullptr);
  EXPECT_FALSE(p.malformed);
  EXPECT_THAT(MapKeys(p.descriptor), ElementsAre("descriptor_version", "connector_id", "metrics"));
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(AcmeRow()).ok());
  auto e = DecodeFixture("kv_bare_descriptor", nullptr, &catalog);
  ASSERT_EQ(e->ids.payloads.size(), 1u);
  ASSERT_NE(Identified(*e, 0).row, nullptr);
  EXPECT_EQ(Identified(*e, 0).row->id, "AcmeConnector");
}

// --- Malformed and hostile payloads never fail the message ----------------------------------

TEST(ConnectorIdentification, NonMapPayloadIsMalformedAndTheMessageStillDecodes) {
  auto d = DecodeFixture("kv_not_a_map");
  ASSERT_TRUE(d->status.ok());
  EXPECT_EQ(d->out.scheduler_stats->num_running_reqs, 1) << "the rest of the stats decoded";
  EXPECT_EQ(d->out.timestamp, 10.0);
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  EXPECT_TRUE(Payload(*d, 0).malformed);
  EXPECT_EQ(Identified(*d, 0).row, nullptr);
  EXPECT_EQ(Identified(*d, 0).identified_by, kNone);
  EXPECT_EQ(Payload(*d, 0).payload, std::string_view("\x92\x01\x02", 3));
  EXPECT_FALSE(d->reporter.problems.empty()) << "the malformed payload is reported";
}

TEST(ConnectorIdentification, NonMapPayloadIsMalformedEvenWhenConfigured) {
  const ConnectorConfig config{"NixlConnector", {}};
  auto d = DecodeFixture("kv_not_a_map", &config);
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  EXPECT_TRUE(Payload(*d, 0).malformed);
  EXPECT_EQ(Identified(*d, 0).row, nullptr);
}

TEST(ConnectorIdentification, MultiChildThatIsNotAMapIsMalformedAndItsSiblingStillRecords) {
  auto d = DecodeFixture("kv_multi_child_not_a_map");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeStoreConnector", "", kNone, false, /*malformed=*/true}});
  EXPECT_EQ(Payload(*d, 1).payload, std::string_view("\x92\x01\x02", 3));
}

TEST(ConnectorIdentification, WrongTypedFieldsDoNotChangeWhichConnectorItIs) {
  auto d = DecodeFixture("kv_nixl_wrong_types");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
}

TEST(ConnectorIdentification, DeepNestingInAChildDoesNotFailTheMessage) {
  auto d = DecodeFixture("kv_deep_nesting");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey}, {"DeepConnector", "", kNone}});
}

// --- Configured connectors ---------------------------------------------------------------

TEST(ConnectorIdentification, ConfiguredConnectorIdentifiesABarePayload) {
  const ConnectorConfig config{"NixlConnector", {}};
  auto d = DecodeFixture("kv_nixl", &config);
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kConfigured}});
}

TEST(ConnectorIdentification, ConfiguredSubclassNameKeepsItsNameAndUsesItsRow) {
  const ConnectorConfig config{"NixlPushConnector", {}};
  auto d = DecodeFixture("kv_nixl", &config);
  ExpectPayloads(*d, false, {{"NixlPushConnector", "NixlConnector", kConfigured}});
}

TEST(ConnectorIdentification, ConfiguredConnectorOverridesShapeInference) {
  // A payload with num_failed_recvs would be inferred as Mooncake P2P; the configuration says
  // NIXL, and the configuration wins.
  const ConnectorConfig nixl{"NixlConnector", {}};
  auto d = DecodeFixture("kv_mooncake_p2p", &nixl);
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kConfigured}});
  // And the other way round.
  const ConnectorConfig p2p{"MooncakeConnector", {}};
  auto e = DecodeFixture("kv_nixl", &p2p);
  ExpectPayloads(*e, false, {{"MooncakeConnector", "MooncakeConnector", kConfigured}});
}

TEST(ConnectorIdentification, ConfiguredConnectorWithoutARowIsAnUnknownConnectorByItsName) {
  const ConnectorConfig config{"P2pNcclConnector", {}};
  auto d = DecodeFixture("kv_nixl", &config);
  ASSERT_EQ(d->ids.payloads.size(), 1u);
  EXPECT_EQ(Payload(*d, 0).connector, "P2pNcclConnector");
  EXPECT_EQ(Identified(*d, 0).row, nullptr) << "not re-inferred as NIXL behind the config's back";
  EXPECT_FALSE(Payload(*d, 0).malformed);
}

TEST(ConnectorIdentification, ConfiguredMultiConnectorDecodesChildrenByKey) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector", "MooncakeStoreConnector"}};
  auto d = DecodeFixture("kv_multi_unsupported_child", &config);
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey},
                  {"UnsupportedConnector", "", kNone}});
}

TEST(ConnectorIdentification, ConfiguredMultiConnectorStillUnwrapsDataWrappedChildren) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector", "MooncakeStoreConnector"}};
  auto d = DecodeFixture("kv_multi_data_wrapped", &config);
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey, true},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey, true}});
}

TEST(ConnectorIdentification, ConfiguredMultiConnectorWithAnEmptyMapCarriesNoPayload) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector"}};
  auto d = DecodeFixture("kv_empty_map", &config);
  EXPECT_THAT(d->ids.payloads, IsEmpty());
}

TEST(ConnectorIdentification, ConfigFromVllmJsonDrivesIdentification) {
  auto config = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"MultiConnector","kv_role":"kv_both",)"
      R"("kv_connector_extra_config":{"connectors":[)"
      R"({"kv_connector":"NixlConnector","kv_role":"kv_both"},)"
      R"({"kv_connector":"MooncakeConnector","kv_role":"kv_both"}]}})");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto d = DecodeFixture("kv_multi_mooncake_p2p", &config.value());
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeConnector", "MooncakeConnector", kChildKey}});
  auto bare = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"HF3FSKVConnector","kv_role":"kv_both"})");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  auto h = DecodeFixture("kv_hf3fs", &bare.value());
  ExpectPayloads(*h, false, {{"HF3FSKVConnector", "HF3FSKVConnector", kConfigured}});
}

TEST(ConnectorIdentification, NamesOfHowAPayloadWasIdentified) {
  EXPECT_STREQ(IdentifiedByName(IdentifiedBy::kConfigured), "configured");
  EXPECT_STREQ(IdentifiedByName(IdentifiedBy::kMultiChildKey), "multi_child_key");
  EXPECT_STREQ(IdentifiedByName(IdentifiedBy::kInferredShape), "inferred_shape");
  EXPECT_STREQ(IdentifiedByName(IdentifiedBy::kDescriptor), "descriptor");
  EXPECT_STREQ(IdentifiedByName(IdentifiedBy::kNone), "none");
}

}  // namespace
}  // namespace vmetrics
