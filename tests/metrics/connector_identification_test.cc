// Tests of src/protocol/kv_connector_stats.cc: which connector each kv_connector_stats payload
// is tied to (configured, MultiConnector child key, inferred shape, unknown, malformed), every
// row of the Rust frontend's decision table (rust-frontend-metrics.md §1.8.2) with the outcome
// OUR rules give (DESIGN.md §3, docs/recording.md), and ForEachConnectorSample's walk of each
// built-in row's payload.
#include "vmetrics/kv_connector_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::MapKeys;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::RecordingReporter;

struct Decoded {
  std::string data;
  RecordingReporter reporter;
  DecodeContext ctx;
  EngineCoreOutputs out;
  Status status;

  const KvConnectorStats& kv() const { return *out.scheduler_stats->kv_connector_stats; }
};

std::unique_ptr<Decoded> DecodeFixture(std::string_view name,
                                       const ConnectorConfig* config = nullptr,
                                       const ConnectorCatalog* catalog = nullptr) {
  auto d = std::make_unique<Decoded>();
  d->data = ReadFixture(name);
  d->ctx.connectors = config;
  d->ctx.reporter = &d->reporter;
  d->ctx.message_number = 1;
  if (catalog != nullptr) d->ctx.catalog = catalog;
  d->status = DecodeOne(d->data, d->ctx, &d->out);
  EXPECT_TRUE(d->status.ok()) << name << ": " << d->status.ToString();
  EXPECT_TRUE(d->out.scheduler_stats.has_value()) << name;
  if (d->out.scheduler_stats) {
    EXPECT_TRUE(d->out.scheduler_stats->kv_connector_stats.has_value()) << name;
  }
  return d;
}

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
  const KvConnectorStats& kv = d.kv();
  EXPECT_EQ(kv.multi, multi);
  EXPECT_TRUE(testing::ViewsInto(kv.raw, d.data)) << "raw is a view into frame 0";
  ASSERT_EQ(kv.payloads.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const ConnectorPayload& p = kv.payloads[i];
    const Want& w = want[i];
    SCOPED_TRACE("payload " + std::to_string(i) + " (" + w.connector + ")");
    EXPECT_EQ(p.connector, w.connector);
    if (w.row.empty()) {
      EXPECT_EQ(p.row, nullptr) << "got row " << (p.row ? p.row->id : "");
    } else {
      ASSERT_NE(p.row, nullptr);
      EXPECT_EQ(p.row->id, w.row);
    }
    EXPECT_EQ(p.identified_by, w.by)
        << IdentifiedByName(p.identified_by) << " vs " << IdentifiedByName(w.by);
    EXPECT_EQ(p.data_wrapped, w.wrapped);
    EXPECT_EQ(p.malformed, w.malformed);
    // The payload is a view into frame 0 at payload_offset.
    EXPECT_EQ(p.payload.data(), d.data.data() + p.payload_offset);
    EXPECT_TRUE(testing::ViewsInto(p.payload, kv.raw)) << "the payload lies inside the raw stats";
    if (!w.malformed) {
      ASSERT_FALSE(p.payload.empty());
      EXPECT_EQ(static_cast<uint8_t>(p.payload[0]) & 0xf0, 0x80) << "a (fix)map payload";
    }
  }
}

const ConnectorPayload& Payload(const Decoded& d, size_t i) { return d.kv().payloads.at(i); }

// --- One payload per built-in connector, no connector configured ---------------------------

TEST(KvConnectorStats, BareNixlIsInferredFromPostDuration) {
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

TEST(KvConnectorStats, BareMooncakeStoreIsInferredFromOperationKeys) {
  auto d = DecodeFixture("kv_mooncake_store");
  ExpectPayloads(*d, false, {{"MooncakeStoreConnector", "MooncakeStoreConnector", kInferred}});
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ElementsAre("load_get"));
}

TEST(KvConnectorStats, BareMooncakeStoreWithDefaultedRecordFieldsIsStillTheStore) {
  auto d = DecodeFixture("kv_mooncake_store_defaults");
  ExpectPayloads(*d, false, {{"MooncakeStoreConnector", "MooncakeStoreConnector", kInferred}});
}

TEST(KvConnectorStats, BareMooncakeP2pIsInferredFromNumFailedRecvsWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_mooncake_p2p");
  ExpectPayloads(*d, false, {{"MooncakeConnector", "MooncakeConnector", kInferred}});
}

TEST(KvConnectorStats, BareOffloadingTypedPayloadIsInferredFromTypesAndData) {
  auto d = DecodeFixture("kv_offloading");
  ExpectPayloads(*d, false, {{"OffloadingConnector", "OffloadingConnector", kInferred}});
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ElementsAre("types", "data", "info"));
}

TEST(KvConnectorStats, BareHf3fsPayloadIsUnknownWithoutConfig) {
  auto d = DecodeFixture("kv_hf3fs");
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  EXPECT_FALSE(Payload(*d, 0).connector.empty()) << "accounted under some connector label";
  ExpectPayloads(*d, false, {{Payload(*d, 0).connector, "", kNone}});
  EXPECT_FALSE(Payload(*d, 0).malformed);
  EXPECT_FALSE(d->reporter.problems.empty()) << "an unknown connector is reported";
}

TEST(KvConnectorStats, BareHf3fsPayloadIsHf3fsWhenConfigured) {
  const ConnectorConfig config{"HF3FSKVConnector", {}};
  auto d = DecodeFixture("kv_hf3fs", &config);
  ExpectPayloads(*d, false, {{"HF3FSKVConnector", "HF3FSKVConnector", kConfigured}});
}

TEST(KvConnectorStats, BareHiSparsePayloadIsHiSparseWhenConfigured) {
  const ConnectorConfig config{"HiSparseConnector", {}};
  auto d = DecodeFixture("kv_hisparse", &config);
  ExpectPayloads(*d, false, {{"HiSparseConnector", "HiSparseConnector", kConfigured}});
}

TEST(KvConnectorStats, BareHiSparsePayloadIsUnknownWithoutConfig) {
  auto d = DecodeFixture("kv_hisparse");
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  EXPECT_EQ(Payload(*d, 0).row, nullptr);
  EXPECT_EQ(Payload(*d, 0).identified_by, kNone);
  EXPECT_FALSE(Payload(*d, 0).malformed);
  EXPECT_FALSE(d->kv().multi) << "flat lists are not MultiConnector children";
}

// --- The Rust frontend's decision table (rust-frontend-metrics.md §1.8.2), row by row --------

// Row 1: "NIXL map with the 7 keys -> Nixl". Same here.
TEST(KvConnectorStats, DecisionTableNixlWithSevenKeysIsNixlAsInRust) {
  auto d = DecodeFixture("kv_nixl");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
}

// Row 2: "{} -> Mooncake with empty map (records nothing)". Ours: no payload at all.
TEST(KvConnectorStats, DecisionTableEmptyMapCarriesNoPayloadWhereRustTookItForMooncakeStore) {
  auto d = DecodeFixture("kv_empty_map");
  EXPECT_FALSE(d->kv().multi);
  EXPECT_THAT(d->kv().payloads, IsEmpty());
  EXPECT_EQ(d->kv().raw, std::string_view("\x80", 1));
}

// Row 3: "Mooncake store map -> Mooncake". Same here.
TEST(KvConnectorStats, DecisionTableMooncakeStoreIsTheStoreAsInRust) {
  auto d = DecodeFixture("kv_mooncake_store");
  ExpectPayloads(*d, false, {{"MooncakeStoreConnector", "MooncakeStoreConnector", kInferred}});
}

// Row 4a: "NIXL map with an extra key -> Multi with everything in other -> NIXL silently not
// recorded". Ours: NIXL (extra keys are ignored).
TEST(KvConnectorStats, NixlWithExtraKeyIsStillNixlWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_nixl_extra_keys");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
  EXPECT_EQ(MapKeys(Payload(*d, 0).payload).size(), 9u);
}

// Row 4b: "... or a missing key -> dropped". Ours: NIXL while post_duration is there.
TEST(KvConnectorStats, NixlWithMissingKeyIsStillNixlWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_nixl_missing_key");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
}

// Without its shape key a NIXL payload is not taken for anything else: it is an unknown
// connector (accounted for) unless NIXL is configured.
TEST(KvConnectorStats, NixlWithoutPostDurationIsUnknownUnlessConfigured) {
  auto d = DecodeFixture("kv_nixl_missing_post_duration");
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  EXPECT_EQ(Payload(*d, 0).row, nullptr);
  EXPECT_EQ(Payload(*d, 0).identified_by, kNone);
  EXPECT_FALSE(Payload(*d, 0).malformed);
  EXPECT_FALSE(d->kv().multi);
  const ConnectorConfig config{"NixlConnector", {}};
  auto c = DecodeFixture("kv_nixl_missing_post_duration", &config);
  ExpectPayloads(*c, false, {{"NixlConnector", "NixlConnector", kConfigured}});
}

// Row 5: "Mooncake P2P payload without a dedicated variant -> Multi/other -> dropped".
// Ours: Mooncake P2P.
TEST(KvConnectorStats, DecisionTableMooncakeP2pIsMooncakeP2pWhereRustDroppedIt) {
  auto d = DecodeFixture("kv_mooncake_p2p");
  ExpectPayloads(*d, false, {{"MooncakeConnector", "MooncakeConnector", kInferred}});
}

// Row 6: "{NixlConnector: <valid nixl>, X: ...} -> Multi (nixl child recorded, X in other)".
// Same here, and X is an unknown connector (accounted for), not silently kept aside.
TEST(KvConnectorStats, DecisionTableMultiWithUnsupportedChildRecordsTheKnownChildrenAsInRust) {
  auto d = DecodeFixture("kv_multi_unsupported_child");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey},
                  {"UnsupportedConnector", "", kNone}});
  EXPECT_THAT(MapKeys(Payload(*d, 2).payload), ElementsAre("sample_count"));
  EXPECT_THAT(MapKeys(Payload(*d, 1).payload), ElementsAre("load_get"));
  // DESIGN.md §3: the unknown connector is logged with its name.
  bool reported = false;
  for (const auto& problem : d->reporter.problems) {
    reported |= problem.connector == "UnsupportedConnector" && problem.message_number == 1;
  }
  EXPECT_TRUE(reported) << d->reporter.Dump();
}

// Row 7: "{NixlConnector: <nixl with extra key>} -> Multi fails -> Other -> nothing recorded".
// Ours: a NIXL child.
TEST(KvConnectorStats, MultiNixlChildWithExtraKeyIsStillNixlWhereRustRecordedNothing) {
  auto d = DecodeFixture("kv_multi_nixl_extra_keys");
  ExpectPayloads(*d, true, {{"NixlConnector", "NixlConnector", kChildKey}});
  EXPECT_EQ(MapKeys(Payload(*d, 0).payload).size(), 9u);
}

// --- MultiConnector children ---------------------------------------------------------------

TEST(KvConnectorStats, MultiMooncakeP2pChildIsIdentifiedByItsKey) {
  auto d = DecodeFixture("kv_multi_mooncake_p2p");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeConnector", "MooncakeConnector", kChildKey}});
}

TEST(KvConnectorStats, DataWrappedMultiChildrenAreUnwrapped) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey, /*wrapped=*/true},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey, true}});
  EXPECT_EQ(MapKeys(Payload(*d, 0).payload).size(), 7u) << "the inner NIXL map, not {data: ...}";
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ::testing::Contains("post_duration"));
  EXPECT_THAT(MapKeys(Payload(*d, 1).payload),
              ElementsAre("load_get", "save_put", "lookup_exists"));
}

TEST(KvConnectorStats, OffloadingChildKeepsItsOwnTopLevelDataKey) {
  auto d = DecodeFixture("kv_multi_offloading_hf3fs_hisparse");
  ExpectPayloads(*d, true,
                 {{"OffloadingConnector", "OffloadingConnector", kChildKey},
                  {"HF3FSKVConnector", "HF3FSKVConnector", kChildKey},
                  {"HiSparseConnector", "HiSparseConnector", kChildKey}});
  EXPECT_THAT(MapKeys(Payload(*d, 0).payload), ElementsAre("types", "data", "info"))
      << "a typed payload has more keys than 'data': never unwrapped";
}

TEST(KvConnectorStats, SubclassChildMapsToItsRowAndAThirdPartyChildKeepsItsDescriptor) {
  auto d = DecodeFixture("kv_multi_descriptor");
  ExpectPayloads(*d, true,
                 {{"NixlPullConnector", "NixlConnector", kChildKey}, {"AcmeConnector", "", kNone}});
  EXPECT_TRUE(Payload(*d, 0).descriptor.empty());
  const std::string_view descriptor = Payload(*d, 1).descriptor;
  ASSERT_FALSE(descriptor.empty());
  EXPECT_THAT(MapKeys(descriptor), ElementsAre("descriptor_version", "connector_id", "metrics"));
  EXPECT_TRUE(testing::ViewsInto(descriptor, Payload(*d, 1).payload));
}

ConnectorRow AcmeRow() {
  ConnectorRow row;
  row.id = "AcmeConnector";
  row.class_names = {"AcmeConnector"};
  row.builtin = false;
  MetricDef hits;
  hits.name = "vllm:acme_hits";
  hits.type = MetricType::kCounter;
  hits.documentation = "Acme cache hits.";
  hits.samples_path = "hits";
  hits.sample_kind = SampleKind::kIncBySumU64;
  row.metrics.push_back(hits);
  return row;
}

TEST(KvConnectorStats, ARowAddedAtRunTimeIdentifiesItsChild) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(AcmeRow()).ok());
  auto d = DecodeFixture("kv_multi_descriptor", nullptr, &catalog);
  ExpectPayloads(*d, true,
                 {{"NixlPullConnector", "NixlConnector", kChildKey},
                  {"AcmeConnector", "AcmeConnector", kChildKey}});
}

// rust-frontend-metrics.md §1.10: a flat payload's connector is the descriptor's connector_id.
TEST(KvConnectorStats, BarePayloadWithADescriptorIsNamedByItsConnectorId) {
  auto d = DecodeFixture("kv_hisparse_descriptor");
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  const ConnectorPayload& p = Payload(*d, 0);
  EXPECT_EQ(p.connector, "HiSparseConnector");
  ASSERT_NE(p.row, nullptr);
  EXPECT_EQ(p.row->id, "HiSparseConnector");
  EXPECT_NE(p.identified_by, kNone);
  EXPECT_FALSE(p.descriptor.empty());
  EXPECT_FALSE(d->kv().multi);
}

TEST(KvConnectorStats, BareThirdPartyPayloadKeepsItsDescriptorForTheRecorder) {
  auto d = DecodeFixture("kv_bare_descriptor");
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  const ConnectorPayload& p = Payload(*d, 0);
  EXPECT_EQ(p.connector, "AcmeConnector");
  EXPECT_EQ(p.row, nullptr);
  EXPECT_FALSE(p.malformed);
  EXPECT_THAT(MapKeys(p.descriptor), ElementsAre("descriptor_version", "connector_id", "metrics"));
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(AcmeRow()).ok());
  auto e = DecodeFixture("kv_bare_descriptor", nullptr, &catalog);
  ASSERT_EQ(e->kv().payloads.size(), 1u);
  ASSERT_NE(Payload(*e, 0).row, nullptr);
  EXPECT_EQ(Payload(*e, 0).row->id, "AcmeConnector");
}

// --- Malformed and hostile payloads never fail the message ----------------------------------

TEST(KvConnectorStats, NonMapPayloadIsMalformedAndTheMessageStillDecodes) {
  auto d = DecodeFixture("kv_not_a_map");
  ASSERT_TRUE(d->status.ok());
  EXPECT_EQ(d->out.scheduler_stats->num_running_reqs, 1) << "the rest of the stats decoded";
  EXPECT_EQ(d->out.timestamp, 10.0);
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  EXPECT_TRUE(Payload(*d, 0).malformed);
  EXPECT_EQ(Payload(*d, 0).row, nullptr);
  EXPECT_EQ(Payload(*d, 0).identified_by, kNone);
  EXPECT_EQ(Payload(*d, 0).payload, std::string_view("\x92\x01\x02", 3));
  EXPECT_FALSE(d->reporter.problems.empty()) << "the malformed payload is reported";
}

TEST(KvConnectorStats, NonMapPayloadIsMalformedEvenWhenConfigured) {
  const ConnectorConfig config{"NixlConnector", {}};
  auto d = DecodeFixture("kv_not_a_map", &config);
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  EXPECT_TRUE(Payload(*d, 0).malformed);
  EXPECT_EQ(Payload(*d, 0).row, nullptr);
}

TEST(KvConnectorStats, MultiChildThatIsNotAMapIsMalformedAndItsSiblingStillRecords) {
  auto d = DecodeFixture("kv_multi_child_not_a_map");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeStoreConnector", "", kNone, false, /*malformed=*/true}});
  EXPECT_EQ(Payload(*d, 1).payload, std::string_view("\x92\x01\x02", 3));
}

TEST(KvConnectorStats, WrongTypedFieldsDoNotChangeWhichConnectorItIs) {
  auto d = DecodeFixture("kv_nixl_wrong_types");
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kInferred}});
}

TEST(KvConnectorStats, DeepNestingInAChildDoesNotFailTheMessage) {
  auto d = DecodeFixture("kv_deep_nesting");
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey}, {"DeepConnector", "", kNone}});
}

// --- Configured connectors ---------------------------------------------------------------

TEST(KvConnectorStats, ConfiguredConnectorIdentifiesABarePayload) {
  const ConnectorConfig config{"NixlConnector", {}};
  auto d = DecodeFixture("kv_nixl", &config);
  ExpectPayloads(*d, false, {{"NixlConnector", "NixlConnector", kConfigured}});
}

TEST(KvConnectorStats, ConfiguredSubclassNameKeepsItsNameAndUsesItsRow) {
  const ConnectorConfig config{"NixlPushConnector", {}};
  auto d = DecodeFixture("kv_nixl", &config);
  ExpectPayloads(*d, false, {{"NixlPushConnector", "NixlConnector", kConfigured}});
}

TEST(KvConnectorStats, ConfiguredConnectorOverridesShapeInference) {
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

TEST(KvConnectorStats, ConfiguredConnectorWithoutARowIsAnUnknownConnectorByItsName) {
  const ConnectorConfig config{"P2pNcclConnector", {}};
  auto d = DecodeFixture("kv_nixl", &config);
  ASSERT_EQ(d->kv().payloads.size(), 1u);
  EXPECT_EQ(Payload(*d, 0).connector, "P2pNcclConnector");
  EXPECT_EQ(Payload(*d, 0).row, nullptr) << "not re-inferred as NIXL behind the config's back";
  EXPECT_FALSE(Payload(*d, 0).malformed);
}

TEST(KvConnectorStats, ConfiguredMultiConnectorDecodesChildrenByKey) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector", "MooncakeStoreConnector"}};
  auto d = DecodeFixture("kv_multi_unsupported_child", &config);
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey},
                  {"UnsupportedConnector", "", kNone}});
}

TEST(KvConnectorStats, ConfiguredMultiConnectorStillUnwrapsDataWrappedChildren) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector", "MooncakeStoreConnector"}};
  auto d = DecodeFixture("kv_multi_data_wrapped", &config);
  ExpectPayloads(*d, true,
                 {{"NixlConnector", "NixlConnector", kChildKey, true},
                  {"MooncakeStoreConnector", "MooncakeStoreConnector", kChildKey, true}});
}

TEST(KvConnectorStats, ConfiguredMultiConnectorWithAnEmptyMapCarriesNoPayload) {
  const ConnectorConfig config{"MultiConnector", {"NixlConnector"}};
  auto d = DecodeFixture("kv_empty_map", &config);
  EXPECT_THAT(d->kv().payloads, IsEmpty());
}

TEST(KvConnectorStats, ConfigFromVllmJsonDrivesIdentification) {
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

// --- ForEachConnectorSample: each row's payload walked into samples ---------------------------

struct Collected {
  size_t returned = 0;
  size_t calls = 0;                                   // callbacks: one per field
  size_t values_seen = 0;                             // values over all callbacks
  std::map<std::string, std::vector<double>> values;  // metric name -> values in order
  std::map<std::string, double> sums;                 // "name{labels}" -> sum of values
};

Collected Walk(const Decoded& d, size_t payload) {
  Collected c;
  const ConnectorPayload& p = d.kv().payloads.at(payload);
  if (p.row == nullptr) {
    ADD_FAILURE() << "payload " << payload << " has no row";
    return c;
  }
  c.returned = ForEachConnectorSample(p, d.ctx, [&](const ConnectorSample& s) {
    ++c.calls;
    EXPECT_LT(s.metric_index, p.row->metrics.size());
    if (s.metric_index >= p.row->metrics.size()) return;
    const std::string& name = p.row->metrics[s.metric_index].name;
    EXPECT_EQ(s.extra_label_values.size(), p.row->ExtraLabelNames().size());
    std::string key = name + "{";
    for (std::string_view v : s.extra_label_values) key += std::string(v) + ",";
    key += "}";
    EXPECT_FALSE(s.values.empty()) << "a sample carries at least one value";
    for (const double v : s.values) {
      ++c.values_seen;
      c.values[name].push_back(v);
      c.sums[key] += v;
    }
  });
  EXPECT_EQ(c.returned, c.values_seen) << "the return value counts the values";
  return c;
}

TEST(ForEachConnectorSample, NixlObservesEveryElementAndCountsFailures) {
  auto d = DecodeFixture("kv_nixl");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:nixl_xfer_time_seconds"], ElementsAre(0.01, 0.02));
  EXPECT_THAT(c.values["vllm:nixl_post_time_seconds"], ElementsAre(0.001, 0.002));
  EXPECT_THAT(c.values["vllm:nixl_bytes_transferred"], ElementsAre(4096.0, 8192.0));
  EXPECT_THAT(c.values["vllm:nixl_num_descriptors"], ElementsAre(2.0, 4.0));
  if (c.sums.count("vllm:nixl_num_failed_transfers{}")) {
    EXPECT_EQ(c.sums.at("vllm:nixl_num_failed_transfers{}"), 0.0) << "an empty list adds nothing";
  }
  EXPECT_EQ(c.sums.at("vllm:nixl_num_kv_expired_reqs{}"), 1.0);
  EXPECT_EQ(c.calls, c.values.size()) << "one callback per field, carrying all its values";
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, NixlExtraKeysAreIgnoredWithoutComplaint) {
  auto d = DecodeFixture("kv_nixl_extra_keys");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:nixl_xfer_time_seconds"], ElementsAre(0.01, 0.02));
  EXPECT_EQ(c.sums.at("vllm:nixl_num_kv_expired_reqs{}"), 1.0);
  for (const auto& [name, values] : c.values) {
    EXPECT_EQ(name.find("handshake"), std::string::npos) << "no family for the newer keys";
  }
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, NixlMissingKeyIsAnEmptyList) {
  auto d = DecodeFixture("kv_nixl_missing_key");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:nixl_post_time_seconds"], ElementsAre(0.001, 0.002));
  EXPECT_EQ(c.values.count("vllm:nixl_num_failed_notifications"), 0u);
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, WrongTypedNixlFieldIsSkippedAndReportedTheRestRecords) {
  auto d = DecodeFixture("kv_nixl_wrong_types");
  Collected c = Walk(*d, 0);
  EXPECT_EQ(c.values.count("vllm:nixl_xfer_time_seconds"), 0u) << "the str is skipped";
  EXPECT_THAT(c.values["vllm:nixl_post_time_seconds"], ElementsAre(0.001, 0.002));
  EXPECT_THAT(c.values["vllm:nixl_num_descriptors"], ElementsAre(2.0, 4.0));
  EXPECT_EQ(c.sums.at("vllm:nixl_num_kv_expired_reqs{}"), 1.0);
  const auto transfer = d->reporter.ForKey("transfer_duration");
  ASSERT_FALSE(transfer.empty()) << d->reporter.Dump();
  EXPECT_EQ(transfer[0].connector, "NixlConnector");
  EXPECT_FALSE(d->reporter.ForKey("bytes_transferred").empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, MooncakeStoreRecordFeedsAllFiveFamiliesWithItsLabels) {
  auto d = DecodeFixture("kv_mooncake_store");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"], ElementsAre(0.05));
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,ok,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,ok,}"), 3.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 1024.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{load_get,ok,}"), 0.0)
      << "Python creates all five children at once, failed_keys at 0";
}

TEST(ForEachConnectorSample, MooncakeStoreRecordDefaultsStatusOkAndAnyOperationName) {
  auto d = DecodeFixture("kv_mooncake_store_defaults");
  Collected c = Walk(*d, 0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{save_exists,ok,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{save_exists,ok,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{write_back_put,error,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{write_back_put,error,}"), 4096.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{write_back_put,error,}"), 1.0);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"], ElementsAre(0.001, 0.5));
}

// The walk remembers what the key at each position of a record meant; records that give their
// keys in another order, with extra keys, or with more keys than it remembers are still read
// by name.
TEST(ForEachConnectorSample, StoreRecordsAreReadByKeyWhateverTheirKeyOrder) {
  auto d = DecodeFixture("kv_mooncake_store_key_orders");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"],
              ElementsAre(0.1, 0.2, 0.3, 0.4, 0.5, 0.6));
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,ok,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,error,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{load_get,partial_failure,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation{save_put,ok,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,ok,}"), 5.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,error,}"), 3.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{load_get,partial_failure,}"), 5.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{save_put,ok,}"), 13.0)
      << "num_keys at the 40th position, past the remembered ones";
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 10.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,error,}"), 20.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,partial_failure,}"), 50.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{load_get,error,}"), 2.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{load_get,partial_failure,}"), 1.0);
  EXPECT_EQ(c.returned, 3 * 6u + 2 * 4u)
      << "time, count and keys of all six records, bytes and failed keys of four";
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(ForEachConnectorSample, UnwrappedStoreChildWalksEveryOperationInOrder) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  Collected c = Walk(*d, 1);
  EXPECT_THAT(c.values["vllm:mooncake_store_operation_time_seconds"],
              ElementsAre(0.02, 0.31, 0.0004));
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_failed_keys{save_put,partial_failure,}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 16777216.0);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_keys{lookup_exists,ok,}"), 8.0);
  Collected nixl = Walk(*d, 0);
  EXPECT_THAT(nixl.values["vllm:nixl_xfer_time_seconds"], ElementsAre(0.01, 0.02));
}

// label_set lets a recorder resolve a record's children once: every sample of one record has
// the same nonzero set and the same labels, the next record another set; flat payloads promise
// nothing (0).
TEST(ForEachConnectorSample, EachStoreRecordsSamplesShareOneLabelSet) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  const ConnectorPayload& store = d->kv().payloads.at(1);
  ASSERT_NE(store.row, nullptr);
  std::map<uint32_t, std::vector<std::string>> labels_of_set;
  std::vector<uint32_t> order;
  ForEachConnectorSample(store, d->ctx, [&](const ConnectorSample& s) {
    EXPECT_NE(s.label_set, 0u);
    const std::vector<std::string> labels(s.extra_label_values.begin(), s.extra_label_values.end());
    auto [it, first] = labels_of_set.emplace(s.label_set, labels);
    if (first) order.push_back(s.label_set);
    EXPECT_EQ(it->second, labels) << "set " << s.label_set;
  });
  EXPECT_THAT(order, ElementsAre(1u, 2u, 3u)) << "one set per record, in record order";
  EXPECT_EQ(labels_of_set[1], (std::vector<std::string>{"load_get", "ok"}));
  EXPECT_EQ(labels_of_set[2], (std::vector<std::string>{"save_put", "partial_failure"}));
  EXPECT_EQ(labels_of_set[3], (std::vector<std::string>{"lookup_exists", "ok"}));
  ForEachConnectorSample(d->kv().payloads.at(0), d->ctx,
                         [&](const ConnectorSample& s) { EXPECT_EQ(s.label_set, 0u); });
}

// The walk keeps a record's labels in buffers reused from call to call; a walk started from
// inside a callback (here: of another store payload, then of the same one) must not disturb
// the labels of the record the outer walk is in the middle of.
TEST(ForEachConnectorSample, AWalkInsideACallbackLeavesTheOuterRecordsLabelsAlone) {
  auto d = DecodeFixture("kv_multi_data_wrapped");
  const ConnectorPayload& store = d->kv().payloads.at(1);
  auto d2 = DecodeFixture("kv_mooncake_store_defaults");
  const ConnectorPayload& other = d2->kv().payloads.at(0);
  ASSERT_NE(store.row, nullptr);
  ASSERT_NE(other.row, nullptr);
  std::vector<std::string> outer;
  size_t inner_samples = 0;
  ForEachConnectorSample(store, d->ctx, [&](const ConnectorSample& s) {
    const std::string before =
        std::string(s.extra_label_values[0]) + "," + std::string(s.extra_label_values[1]);
    inner_samples += ForEachConnectorSample(other, d2->ctx, [](const ConnectorSample&) {});
    outer.push_back(before);
    EXPECT_EQ(before,
              std::string(s.extra_label_values[0]) + "," + std::string(s.extra_label_values[1]))
        << "the outer sample's labels after an inner walk";
  });
  EXPECT_GT(inner_samples, 0u);
  ASSERT_FALSE(outer.empty());
  EXPECT_EQ(outer.front(), "load_get,ok");
  EXPECT_EQ(outer.back(), "lookup_exists,ok");
  // And a plain walk afterwards still finds its own labels.
  Collected c = Walk(*d, 1);
  EXPECT_EQ(c.sums.at("vllm:mooncake_store_operation_bytes{load_get,ok,}"), 16777216.0);
}

TEST(ForEachConnectorSample, MooncakeP2pFeedsItsSixFamilies) {
  auto d = DecodeFixture("kv_mooncake_p2p");
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:mooncake_xfer_time_seconds"], ElementsAre(0.004));
  EXPECT_THAT(c.values["vllm:mooncake_bytes_transferred"], ElementsAre(2097152.0));
  EXPECT_THAT(c.values["vllm:mooncake_num_descriptors"], ElementsAre(16.0));
  EXPECT_EQ(c.sums.at("vllm:mooncake_num_failed_recvs{}"), 1.0);
}

TEST(ForEachConnectorSample, OffloadingReadsTheEmptyTupleEntry) {
  auto d = DecodeFixture("kv_offloading");
  Collected c = Walk(*d, 0);
  EXPECT_EQ(c.sums.at("vllm:kv_offload_store_bytes{}"), 4194304.0);
  EXPECT_THAT(c.values["vllm:kv_offload_store_size"], ElementsAre(4194304.0));
}

TEST(ForEachConnectorSample, Hf3fsAddsScalarCountsAndObservesDurations) {
  const ConnectorConfig config{"HF3FSKVConnector", {}};
  auto d = DecodeFixture("kv_hf3fs", &config);
  Collected c = Walk(*d, 0);
  EXPECT_THAT(c.values["vllm:hf3fs_save_duration_seconds"], ElementsAre(0.02, 0.03));
  EXPECT_THAT(c.values["vllm:hf3fs_load_duration_seconds"], ElementsAre(0.01));
  EXPECT_EQ(c.sums.at("vllm:hf3fs_num_failed_save{}"), 1.0);
}

TEST(ForEachConnectorSample, HiSparseSumsItsCounterLists) {
  auto d = DecodeFixture("kv_multi_offloading_hf3fs_hisparse");
  Collected c = Walk(*d, 2);
  EXPECT_EQ(c.sums.at("vllm:hisparse_cache_hits{}"), 8.0);
  EXPECT_EQ(c.sums.at("vllm:hisparse_cache_misses{}"), 1.0);
  EXPECT_EQ(c.sums.at("vllm:hisparse_host_to_device_bytes{}"), 65536.0);
}

TEST(ForEachConnectorSample, RunTimeRowWalksItsPayloadPath) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(AcmeRow()).ok());
  auto d = DecodeFixture("kv_multi_descriptor", nullptr, &catalog);
  Collected c = Walk(*d, 1);
  EXPECT_EQ(c.sums.at("vllm:acme_hits{}"), 5.0);
}

}  // namespace
}  // namespace vmetrics
