// SPDX-License-Identifier: Apache-2.0
// Tests of the `_metrics_descriptor` protocol:
//   - src/metrics/metrics_descriptor.cc: ParseMetricsDescriptor on the descriptors Python
//     connectors send (tests/fixtures/descriptor_v1/, tools/gen_descriptor_fixtures.py), one test
//     per way of being invalid (invalid_cases.tsv), DescribeRowAsDescriptorJson both ways;
//   - the run-time half of src/metrics/connector_catalog.cc (AddRow/AddAlias from several
//     threads, the run-time row limit);
//   - what identification and the walk do with descriptors: a bare payload named by its
//     descriptor and by the sole described row, Multi children that carry one, reserved keys,
//     typed values keyed by label tuples.
#include "vmetrics/metrics_descriptor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/protocol/fixture_util.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/connector_identification.h"
#include "vmetrics/connector_walk.h"
#include "vmetrics/engine_core_outputs.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::ReadFile;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::RecordingReporter;
using Json = nlohmann::json;

std::string Descriptor(std::string_view name) {
  return ReadFixture("descriptor_v1/descriptor_" + std::string(name));
}

Result<ConnectorRow> Parse(std::string_view name) {
  return ParseMetricsDescriptor(Descriptor(name));
}

// msgpack of a JSON document (tests that need a descriptor no Python connector sends).
std::string Msgpack(const Json& j) {
  std::vector<uint8_t> bytes = Json::to_msgpack(j);
  return std::string(bytes.begin(), bytes.end());
}

Json AcmeJson() {
  return Json::parse(R"({"descriptor_version": 1, "connector_id": "AcmeConnector",
      "metrics": [{"name": "vllm:acme_hits", "type": "counter", "documentation": "Hits.",
                   "samples_path": "hits", "sample_kind": "inc_by_sum_u64"}]})");
}

// --- Descriptors as Python connectors send them -------------------------------------------------

TEST(ParseMetricsDescriptor, HiSparseDescriptorBecomesARuntimeRow) {
  Result<ConnectorRow> row = Parse("hisparse");
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  EXPECT_EQ(row->id, "HiSparseConnector");
  EXPECT_THAT(row->class_names, ElementsAre("HiSparseConnector"));
  EXPECT_FALSE(row->builtin);
  EXPECT_EQ(row->shape_rule, ShapeRule::kNever);
  EXPECT_EQ(row->children, ChildCreation::kEagerPerEngine);
  ASSERT_EQ(row->metrics.size(), 3u);
  EXPECT_EQ(row->metrics[0].name, "vllm:hisparse_cache_hits");
  EXPECT_EQ(row->metrics[0].type, MetricType::kCounter);
  EXPECT_EQ(row->metrics[0].documentation, "Number of HiSparse device hot-buffer hits.");
  EXPECT_EQ(row->metrics[0].samples_path, "cache_hits");
  EXPECT_EQ(row->metrics[0].sample_kind, SampleKind::kIncBySumU64);
  EXPECT_EQ(row->metrics[0].scale, 1.0);
  EXPECT_TRUE(ValidateRow(*row).ok());
}

// Found by descriptor_fuzz: a documentation that is not UTF-8 was accepted, and describing the
// row then threw (nlohmann refuses to dump it). msgspec refuses such a str, so vmetrics does too.
TEST(ParseMetricsDescriptor, StringsThatAreNotUtf8AreRefused) {
  const std::string good = Msgpack(AcmeJson());
  ASSERT_TRUE(ParseMetricsDescriptor(good).ok());
  // "Hits." is a 5-byte fixstr; replace its bytes with invalid UTF-8 of the same length.
  for (const std::string& bad : {std::string("Hi\x8bs."), std::string("Hi\xc0\xaf."),
                                 std::string("H\xed\xa0\x80."), std::string("Hits\xe2")}) {
    std::string raw = good;
    const size_t at = raw.find("Hits.");
    ASSERT_NE(at, std::string::npos);
    raw.replace(at, 5, bad);
    Result<ConnectorRow> row = ParseMetricsDescriptor(raw);
    ASSERT_FALSE(row.ok());
    EXPECT_NE(row.status().message().find("not valid UTF-8"), std::string::npos)
        << row.status().ToString();
  }
  Json utf8 = AcmeJson();
  utf8["metrics"][0]["documentation"] = "Tr\u00e8s \u2713 \U0001F600 hits.";
  EXPECT_TRUE(ParseMetricsDescriptor(Msgpack(utf8)).ok());
}

// The three built-in connectors that send descriptors in Python describe exactly their rows.
TEST(ParseMetricsDescriptor, PythonDescriptorsOfBuiltInConnectorsEqualTheirRows) {
  for (const char* name : {"hisparse", "hf3fs", "offloading"}) {
    Result<ConnectorRow> row = Parse(name);
    ASSERT_TRUE(row.ok()) << name << ": " << row.status().ToString();
    const ConnectorRow* builtin = ConnectorCatalog::BuiltIn().FindByClassName(row->id);
    ASSERT_NE(builtin, nullptr) << row->id;
    std::string difference;
    EXPECT_TRUE(SameMetrics(*row, *builtin, &difference)) << name << ": " << difference;
  }
}

TEST(ParseMetricsDescriptor, EverySampleKindAndItsNormalisation) {
  Result<ConnectorRow> row = Parse("acme_kinds");
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  std::vector<std::string> kinds;
  for (const MetricDef& m : row->metrics) kinds.push_back(SampleKindName(m.sample_kind));
  EXPECT_THAT(kinds, ElementsAre("inc_by_u64", "inc_by_sum_u64", "inc_by_f64", "set_u64", "set_f64",
                                 "observe_each_f64", "observe_each_u64_as_f64", "inc_by_sum_u64",
                                 "inc_by_sum_u64"));
  const auto& m = row->metrics;
  EXPECT_EQ(m[0].name, "vllm:acme_ops") << "a counter's _total is stripped";
  EXPECT_EQ(m[2].documentation, "KV connector metric vllm:acme_busy_seconds.")
      << "empty documentation";
  EXPECT_EQ(m[3].samples_path, "queue.depth");
  EXPECT_EQ(m[4].documentation, "Load ratio.") << "the period comes back";
  EXPECT_EQ(m[1].documentation, "Items processed.") << "one period, not two";
  EXPECT_EQ(m[5].scale, 0.001);
  EXPECT_THAT(m[5].buckets, ElementsAre(0.001, 0.01, 0.1, 1.0));
  EXPECT_THAT(m[6].buckets, ElementsAre(1.0, 4.0, 16.0, 64.0)) << "a trailing +Inf is implied";
  ASSERT_EQ(m[7].const_labels.size(), 1u);
  EXPECT_EQ(m[7].const_labels[0], std::make_pair(std::string("direction"), std::string("read")));
  EXPECT_EQ(m[8].name, m[7].name) << "two metrics may feed one family";
}

TEST(ParseMetricsDescriptor, TypedConnectorDeclaresLabelnames) {
  Result<ConnectorRow> row = Parse("acme_offload");
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  ASSERT_EQ(row->metrics.size(), 5u);
  EXPECT_EQ(row->metrics[0].samples_path, "data.vllm:acme_offload_bytes");
  EXPECT_THAT(row->metrics[3].labelnames, ElementsAre("tier"));
}

TEST(ParseMetricsDescriptor, UnknownKeysAndNilOptionalsAreAccepted) {
  Json j = AcmeJson();
  j["newer_top_level_field"] = {1, 2};
  j["metrics"][0]["unit"] = "requests";
  j["metrics"][0]["buckets"] = nullptr;
  j["metrics"][0]["scale"] = nullptr;
  j["metrics"][0]["const_labels"] = nullptr;
  j["metrics"][0]["documentation"] = nullptr;
  Result<ConnectorRow> row = ParseMetricsDescriptor(Msgpack(j));
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  EXPECT_EQ(row->metrics[0].documentation, "KV connector metric vllm:acme_hits.");
  EXPECT_EQ(row->metrics[0].scale, 1.0);
}

TEST(ParseMetricsDescriptor, AnEmptyMetricListIsValid) {
  Json j = AcmeJson();
  j["metrics"] = Json::array();
  Result<ConnectorRow> row = ParseMetricsDescriptor(Msgpack(j));
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  EXPECT_TRUE(row->metrics.empty());
}

// Every prefix of a descriptor fails cleanly (the bounded reader never reads past the end).
TEST(ParseMetricsDescriptor, EveryTruncationFailsWithoutReadingPastTheEnd) {
  const std::string full = Descriptor("acme_kinds");
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string prefix = full.substr(0, n);  // its own buffer: ASan sees an overread
    Result<ConnectorRow> row = ParseMetricsDescriptor(prefix);
    EXPECT_FALSE(row.ok()) << "prefix of " << n << " bytes";
  }
}

// --- One test per way of being invalid (tests/fixtures/descriptor_v1/invalid_cases.tsv) -------

struct InvalidCase {
  std::string name;
  std::string field;   // the message starts with "<field>: "
  std::string phrase;  // and contains this
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

std::vector<InvalidCase> LoadInvalidCases() {
  std::istringstream in(ReadFile(testing::FixturePath("descriptor_v1/invalid_cases.tsv")));
  std::vector<InvalidCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    InvalidCase c;
    std::getline(fields, c.name, '\t');
    std::getline(fields, c.field, '\t');
    std::getline(fields, c.phrase, '\t');
    cases.push_back(c);
  }
  return cases;
}

class InvalidDescriptor : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidDescriptor, IsRefusedWithAMessageNamingTheField) {
  const InvalidCase& c = GetParam();
  Result<ConnectorRow> row = ParseMetricsDescriptor(ReadFixture("descriptor_v1/invalid_" + c.name));
  ASSERT_FALSE(row.ok()) << c.name << " was accepted";
  EXPECT_EQ(row.status().code(), StatusCode::kInvalidArgument) << row.status().ToString();
  EXPECT_THAT(row.status().message(), StartsWith(c.field + ": "));
  EXPECT_THAT(row.status().message(), HasSubstr(c.phrase));
}

std::string CaseName(const ::testing::TestParamInfo<InvalidCase>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, InvalidDescriptor, ::testing::ValuesIn(LoadInvalidCases()),
                         CaseName);

TEST(InvalidDescriptorTable, CoversEveryKindOfRejection) {
  EXPECT_GE(LoadInvalidCases().size(), 40u) << "the table lost cases";
}

// --- Both ways: a row written as a descriptor reads back as the same row ----------------------

TEST(DescribeRowAsDescriptorJson, HiSparseRowReadsAsTheDescriptorPythonSends) {
  const ConnectorRow* row = ConnectorCatalog::BuiltIn().FindByClassName("HiSparseConnector");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(DescribeRowAsDescriptorJson(*row),
            R"({"descriptor_version":1,"connector_id":"HiSparseConnector",)"
            R"("class_names":["HiSparseConnector"],"builtin":true,"children":"eager_per_engine",)"
            R"("metrics":[{"name":"vllm:hisparse_cache_hits","type":"counter",)"
            R"("documentation":"Number of HiSparse device hot-buffer hits.",)"
            R"("samples_path":"cache_hits","sample_kind":"inc_by_sum_u64"},)"
            R"({"name":"vllm:hisparse_cache_misses","type":"counter",)"
            R"("documentation":"Number of HiSparse device hot-buffer misses.",)"
            R"("samples_path":"cache_misses","sample_kind":"inc_by_sum_u64"},)"
            R"({"name":"vllm:hisparse_host_to_device_bytes","type":"counter",)"
            R"("documentation":"Bytes transferred from host KV storage to HiSparse hot buffers.",)"
            R"("samples_path":"host_to_device_bytes","sample_kind":"inc_by_sum_u64"}]})");
}

// Every built-in row that is not record-shaped survives describe -> msgpack -> parse.
TEST(DescribeRowAsDescriptorJson, EveryFlatBuiltInRowRoundTrips) {
  size_t checked = 0;
  for (const auto& row : ConnectorCatalog::BuiltIn().rows()) {
    if (row->record_shaped()) continue;
    const std::string json = DescribeRowAsDescriptorJson(*row);
    Result<ConnectorRow> back = ParseMetricsDescriptor(Msgpack(Json::parse(json)));
    ASSERT_TRUE(back.ok()) << row->id << ": " << back.status().ToString() << "\n" << json;
    std::string difference;
    EXPECT_TRUE(SameMetrics(*row, *back, &difference)) << row->id << ": " << difference;
    EXPECT_EQ(back->id, row->id);
    ++checked;
  }
  EXPECT_GE(checked, 6u) << "NIXL, Mooncake P2P, HF3FS, HiSparse, Offloading, MoRIIO, LMCache";
}

// A counter sent as `x_total_total` is registered as `x_total` (one `_total` stripped); it is
// described with the suffix it was sent with, so it parses back to `x_total`, not `x`.
TEST(DescribeRowAsDescriptorJson, ACounterWhoseNameEndsInTotalRoundTrips) {
  Json j = AcmeJson();
  j["metrics"][0]["name"] = "vllm:acme_hits_total_total";
  Result<ConnectorRow> row = ParseMetricsDescriptor(Msgpack(j));
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  ASSERT_EQ(row->metrics[0].name, "vllm:acme_hits_total");
  const std::string json = DescribeRowAsDescriptorJson(*row);
  Result<ConnectorRow> back = ParseMetricsDescriptor(Msgpack(Json::parse(json)));
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << json;
  std::string difference;
  EXPECT_TRUE(SameMetrics(*row, *back, &difference)) << difference << "\n" << json;
}

TEST(DescribeRowAsDescriptorJson, RecordShapedRowCarriesItsRecordLabels) {
  const ConnectorRow* store = ConnectorCatalog::BuiltIn().FindByClassName("MooncakeStoreConnector");
  ASSERT_NE(store, nullptr);
  Json j = Json::parse(DescribeRowAsDescriptorJson(*store));
  EXPECT_EQ(j["record_labels"]["key"], "operation");
  EXPECT_EQ(j["record_labels"]["fields"][0]["name"], "status");
  EXPECT_EQ(j["record_labels"]["fields"][0]["default"], "ok");
  EXPECT_EQ(j["children"], "on_first_record");
  EXPECT_EQ(j["shape"]["rule"], "operation_records");
  EXPECT_EQ(j["metrics"][1]["sample_kind"], "inc_by_one");
  EXPECT_FALSE(j["metrics"][1].contains("samples_path"));
}

TEST(DescribeRowsAsDescriptorJson, ListsTheRowsInCatalogOrder) {
  Json j = Json::parse(DescribeRowsAsDescriptorJson(ConnectorCatalog::BuiltIn().rows(), 2));
  ASSERT_TRUE(j.is_array());
  std::vector<std::string> ids;
  for (const Json& d : j) ids.push_back(d["connector_id"]);
  EXPECT_THAT(ids, ElementsAre("MooncakeConnector", "NixlConnector", "MooncakeStoreConnector",
                               "OffloadingConnector", "HF3FSKVConnector", "HiSparseConnector",
                               "MoRIIOConnector", "LMCacheConnectorV1"));
}

TEST(SameMetrics, NamesTheFirstDifference) {
  Result<ConnectorRow> a = Parse("hisparse");
  ASSERT_TRUE(a.ok());
  ConnectorRow b = *a;
  b.metrics[1].documentation = "Other.";
  std::string difference;
  EXPECT_FALSE(SameMetrics(*a, b, &difference));
  EXPECT_EQ(difference,
            "metric 1 (vllm:hisparse_cache_misses): documentation 'Number of HiSparse device "
            "hot-buffer misses.' vs 'Other.'");
  EXPECT_TRUE(SameMetrics(*a, *a, nullptr));
}

// A key given twice counts by its last value in the parse (as in a Python dict), and the peek
// names the same connector (the descriptor fuzzer found them disagreeing).
TEST(PeekDescriptorConnectorId, DuplicateKeyGivesTheLastValueAsTheParseDoes) {
  // {"connector_id": "First", "connector_id": "Second"}
  const std::string raw = std::string("\x82\xac") + "connector_id" + "\xa5" + "First" + "\xac" +
                          "connector_id" + "\xa6" + "Second";
  EXPECT_EQ(PeekDescriptorConnectorId(raw), "Second");
  // A later connector_id that is not a string leaves none (the parse refuses it).
  const std::string not_str = std::string("\x82\xac") + "connector_id" + "\xa5" + "First" + "\xac" +
                              "connector_id" + "\x01";
  EXPECT_EQ(PeekDescriptorConnectorId(not_str), "");
}

TEST(PeekDescriptorConnectorId, ReadsTheIdOnly) {
  EXPECT_EQ(PeekDescriptorConnectorId(Descriptor("acme_flat")), "AcmeFlatConnector");
  EXPECT_EQ(PeekDescriptorConnectorId(ReadFixture("descriptor_v1/invalid_connector_id_missing")),
            "");
  EXPECT_EQ(PeekDescriptorConnectorId(ReadFixture("descriptor_v1/invalid_not_a_map")), "");
  EXPECT_EQ(PeekDescriptorConnectorId(""), "");
}

// --- The run-time catalog --------------------------------------------------------------------

ConnectorRow RowFrom(std::string_view name) {
  Result<ConnectorRow> row = Parse(name);
  EXPECT_TRUE(row.ok()) << row.status().ToString();
  return row.ok() ? *row : ConnectorRow{};
}

TEST(RuntimeCatalog, AddedRowsAreRuntimeRowsAndCopiesShareRows) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  const ConnectorRow* nixl = catalog.FindByClassName("NixlConnector");
  EXPECT_EQ(nixl, ConnectorCatalog::BuiltIn().FindByClassName("NixlConnector"))
      << "a copy shares the built-in rows";
  ASSERT_TRUE(catalog.AddRow(RowFrom("acme_flat")).ok());
  ASSERT_EQ(catalog.RuntimeRows().size(), 1u);
  EXPECT_EQ(catalog.RuntimeRows()[0]->id, "AcmeFlatConnector");
  EXPECT_TRUE(ConnectorCatalog::BuiltIn().RuntimeRows().empty());
  ConnectorCatalog second = catalog;
  EXPECT_EQ(second.FindByClassName("AcmeFlatConnector"),
            catalog.FindByClassName("AcmeFlatConnector"));
}

TEST(RuntimeCatalog, AliasAnswersToItsTargetRow) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddAlias("MyHiSparseConnector", "HiSparseConnector").ok());
  EXPECT_EQ(catalog.FindByClassName("MyHiSparseConnector"),
            catalog.FindByClassName("HiSparseConnector"));
  EXPECT_FALSE(catalog.AddAlias("MyHiSparseConnector", "HiSparseConnector").ok()) << "twice";
  EXPECT_FALSE(catalog.AddAlias("NixlConnector", "HiSparseConnector").ok()) << "has a row";
  EXPECT_FALSE(catalog.AddAlias("Other", "NoSuchConnector").ok());
  EXPECT_TRUE(catalog.RuntimeRows().empty()) << "an alias is not a row";
  for (size_t i = 1; i <= ConnectorCatalog::kMaxRuntimeRows; ++i) {
    Status s = catalog.AddAlias("Sub" + std::to_string(i), "HiSparseConnector");
    EXPECT_EQ(s.ok(), i < ConnectorCatalog::kMaxRuntimeRows) << i << ": " << s.ToString();
  }
}

TEST(RuntimeCatalog, RowsWhoseSampleNamesCollideAreRefused) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ConnectorRow row = RowFrom("acme_flat");
  row.metrics[0].name = "vllm:nixl_num_failed_transfers_created";  // NIXL's counter exposes it
  row.metrics[0].type = MetricType::kGauge;
  row.metrics[0].sample_kind = SampleKind::kSetF64;
  Status s = catalog.AddRow(row);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("conflicts with family vllm:nixl_num_failed_transfers of "
                                     "connector NixlConnector"));
}

TEST(RuntimeCatalog, AtMostkMaxRuntimeRowsAreAdded) {
  ConnectorCatalog catalog;
  for (size_t i = 0; i <= ConnectorCatalog::kMaxRuntimeRows; ++i) {
    ConnectorRow row = RowFrom("acme_flat");
    row.id = "Acme" + std::to_string(i);
    row.class_names = {row.id};
    for (MetricDef& m : row.metrics) m.name += "_" + std::to_string(i);
    Status s = catalog.AddRow(row);
    EXPECT_EQ(s.ok(), i < ConnectorCatalog::kMaxRuntimeRows) << i << ": " << s.ToString();
  }
  EXPECT_EQ(catalog.RuntimeRows().size(), ConnectorCatalog::kMaxRuntimeRows);
}

// Lookups on several threads while rows are added on others: every row found is complete, and
// a row pointer stays valid after later additions (run under TSan with -DVMETRICS_TSAN=ON).
TEST(RuntimeCatalog, LookupsRaceWithAdditionsSafely) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  constexpr int kRows = 32;
  std::atomic<bool> done{false};
  std::atomic<int> found{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done.load()) {
        for (int i = 0; i < kRows; ++i) {
          const ConnectorRow* row = catalog.FindByClassName("Acme" + std::to_string(i));
          if (row != nullptr) {
            EXPECT_EQ(row->metrics.size(), 2u);
            found.fetch_add(1);
          }
        }
        EXPECT_NE(catalog.FindByClassName("NixlConnector"), nullptr);
        (void)catalog.rows().size();
      }
    });
  }
  const ConnectorRow* first = nullptr;
  for (int i = 0; i < kRows; ++i) {
    ConnectorRow row = RowFrom("acme_flat");
    row.id = "Acme" + std::to_string(i);
    row.class_names = {row.id};
    for (MetricDef& m : row.metrics) m.name += "_" + std::to_string(i);
    ASSERT_TRUE(catalog.AddRow(row).ok());
    if (i == 0) first = catalog.FindByClassName("Acme0");
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(catalog.FindByClassName("Acme0"), first) << "rows are never moved";
  EXPECT_EQ(catalog.RuntimeRows().size(), static_cast<size_t>(kRows));
}

// --- Identification and walking of payloads that carry descriptors --------------------------

struct Decoded {
  std::string data;
  std::vector<std::string_view> messages;
  RecordingReporter reporter;
  DecodeContext ctx;
  std::vector<EngineCoreOutputs> out;
  std::vector<IdentifiedPayloads> ids;  // per message, identified with the catalog
};

std::unique_ptr<Decoded> DecodeScenario(std::string_view scenario, const ConnectorCatalog* catalog,
                                        const ConnectorConfig* config = nullptr) {
  auto d = std::make_unique<Decoded>();
  d->data = ReadFixture("descriptor_v1/scenario_" + std::string(scenario));
  d->messages = testing::SplitMessages(d->data);
  d->ctx.connectors = config;
  d->ctx.reporter = &d->reporter;
  d->out.resize(d->messages.size());
  d->ids.resize(d->messages.size());
  for (size_t i = 0; i < d->messages.size(); ++i) {
    d->ctx.message_number = i + 1;
    Status s = DecodeOne(d->messages[i], d->ctx, &d->out[i]);
    EXPECT_TRUE(s.ok()) << scenario << " message " << i + 1 << ": " << s.ToString();
    if (s.ok() && d->out[i].scheduler_stats && d->out[i].scheduler_stats->kv_connector_stats) {
      IdentifyConnectorPayloads(*d->out[i].scheduler_stats->kv_connector_stats, *catalog, d->ctx,
                                &d->ids[i]);
    }
  }
  return d;
}

const IdentifiedPayload& Identified(const Decoded& d, size_t message, size_t index) {
  return d.ids.at(message).payloads.at(index);
}
const ConnectorPayload& Payload(const Decoded& d, size_t message, size_t index) {
  return Identified(d, message, index).payload;
}

TEST(DescriptorPayloads, BarePayloadWithADescriptorIsNamedByIt) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  auto d = DecodeScenario("unconfigured", &catalog);
  const ConnectorPayload& p = Payload(*d, 0, 0);
  EXPECT_EQ(p.connector, "AcmeFlatConnector");
  EXPECT_EQ(Identified(*d, 0, 0).row, nullptr) << "no row until the recorder adopts the descriptor";
  EXPECT_FALSE(p.descriptor.empty());
  for (const testing::KeptProblem& problem : d->reporter.problems) {
    EXPECT_NE(problem.message_number, 1u) << d->reporter.Dump();
  }
  // Before a row exists, a bare payload without descriptor is unknown...
  EXPECT_EQ(Payload(*d, 1, 0).connector, "unknown");
}

TEST(DescriptorPayloads, LaterBarePayloadsBelongToTheSoleDescribedRow) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  ASSERT_TRUE(catalog.AddRow(RowFrom("acme_flat")).ok());
  auto d = DecodeScenario("unconfigured", &catalog);
  for (size_t m = 0; m < 3; ++m) {
    EXPECT_EQ(Payload(*d, m, 0).connector, "AcmeFlatConnector") << m;
    EXPECT_NE(Identified(*d, m, 0).row, nullptr) << m;
  }
  // ...but with two described rows nothing is guessed.
  ConnectorRow other = RowFrom("acme_flat");
  other.id = "OtherConnector";
  other.class_names = {"OtherConnector"};
  for (MetricDef& m : other.metrics) m.name += "_other";
  ASSERT_TRUE(catalog.AddRow(other).ok());
  auto two = DecodeScenario("unconfigured", &catalog);
  EXPECT_EQ(Payload(*two, 1, 0).connector, "unknown");
  EXPECT_EQ(Payload(*two, 0, 0).connector, "AcmeFlatConnector") << "the descriptor still names it";
}

TEST(DescriptorPayloads, MultiChildrenKeepTheirDescriptorsAndClassNames) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  auto d = DecodeScenario("hisparse_multi", &catalog);
  const IdentifiedPayloads& kv = d->ids[0];
  EXPECT_TRUE(kv.multi) << "no connector configured: children carrying descriptors make a Multi";
  ASSERT_EQ(kv.payloads.size(), 3u);
  EXPECT_EQ(kv.payloads[0].payload.connector, "HiSparseConnector");
  EXPECT_NE(kv.payloads[0].row, nullptr);
  EXPECT_FALSE(kv.payloads[0].payload.descriptor.empty()) << "kept, for the recorder to check";
  EXPECT_EQ(kv.payloads[1].payload.connector, "AcmeHiSparseConnector");
  EXPECT_EQ(kv.payloads[1].row, nullptr);
  EXPECT_FALSE(kv.payloads[1].payload.descriptor.empty());
  EXPECT_EQ(kv.payloads[2].payload.connector, "MyHiSparseConnector");
  // Identification reports no unknown connector for children that describe themselves (in
  // message 2 they send data only, and only the recorder knows their rows by then).
  for (const testing::KeptProblem& problem : d->reporter.problems) {
    EXPECT_NE(problem.message_number, 1u) << d->reporter.Dump();
  }
  // The second message: the old {"data": ...} shape, no descriptors.
  EXPECT_TRUE(Payload(*d, 1, 0).data_wrapped);
  EXPECT_TRUE(Payload(*d, 1, 0).descriptor.empty());
}

// Sums of the samples of one payload walked with a row, keyed "<family>{labels}".
std::map<std::string, double> Sums(const ConnectorPayload& p, const ConnectorRow& row,
                                   const DecodeContext& ctx) {
  std::map<std::string, double> sums;
  ForEachConnectorSample(p, row, ctx, [&](const ConnectorSample& s) {
    std::string key = row.metrics[s.metric_index].name + "{";
    for (std::string_view v : s.extra_label_values) key.append(v).append(",");
    for (const double v : s.values) sums[key + "}"] += v;
  });
  return sums;
}

TEST(DescriptorPayloads, WalkerReadsEveryKindAndSkipsReservedKeys) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  auto d = DecodeScenario("sample_kinds", &catalog);
  const ConnectorRow row = RowFrom("acme_kinds");
  const auto first = Sums(Payload(*d, 0, 0), row, d->ctx);
  EXPECT_EQ(first.at("vllm:acme_ops{}"), 5.0);
  EXPECT_EQ(first.at("vllm:acme_items{}"), 6.0);
  EXPECT_EQ(first.at("vllm:acme_busy_seconds{}"), 0.25);
  EXPECT_EQ(first.at("vllm:acme_queue_depth{}"), 7.0) << "nested path queue.depth";
  EXPECT_EQ(first.at("vllm:acme_load_ratio{}"), 0.75);
  EXPECT_DOUBLE_EQ(first.at("vllm:acme_latency_seconds{}"), 3.0205) << "scaled by 0.001";
  EXPECT_EQ(first.at("vllm:acme_batch_size{}"), 109.0);
  EXPECT_EQ(first.at("vllm:acme_transfers{}"), 35.0) << "reads and writes feed one family";
  const auto third = Sums(Payload(*d, 2, 0), row, d->ctx);
  EXPECT_EQ(third.at("vllm:acme_ops{}"), 2.0) << "_n_steps is not data";
  for (const testing::KeptProblem& problem : d->reporter.problems) {
    EXPECT_EQ(problem.key, "") << "no field was refused:\n" << d->reporter.Dump();
  }
}

TEST(DescriptorPayloads, LabelledTypedValuesFollowLabelnames) {
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  auto d = DecodeScenario("offloading", &catalog);
  const ConnectorRow row = RowFrom("acme_offload");
  const ConnectorPayload& p = Payload(*d, 0, 1);
  ASSERT_EQ(p.connector, "AcmeOffloadConnector");
  const auto sums = Sums(p, row, d->ctx);
  EXPECT_EQ(sums.at("vllm:acme_offload_bytes{}"), 1000.0);
  EXPECT_EQ(sums.at("vllm:acme_offload_time{}"), 0.5);
  EXPECT_EQ(sums.at("vllm:acme_offload_size{}"), 52000000.0);
  EXPECT_EQ(sums.at("vllm:acme_offload_tier_usage{cpu,}"), 0.5);
  EXPECT_EQ(sums.at("vllm:acme_offload_tier_usage{disk,}"), 0.25);
  EXPECT_EQ(sums.at("vllm:acme_offload_evictions{}"), 3.0) << "a sole labelled entry is read";
  const auto dropped = d->reporter.ForKey("vllm:acme_offload_evictions");
  ASSERT_EQ(dropped.size(), 1u) << d->reporter.Dump();
  EXPECT_THAT(dropped[0].what, HasSubstr("labelled value ('cpu') but the metric declares no "
                                         "labelnames; recorded without its labels"));
}

TEST(DescriptorPayloads, LabelledEntriesWithoutLabelnamesOrOfTheWrongArityAreReported) {
  ConnectorRow row = RowFrom("acme_offload");
  // tier_usage without labelnames: two labelled entries cannot be told apart.
  row.metrics[3].labelnames.clear();
  // evictions with two labelnames: the ('cpu',) tuple has one value.
  row.metrics[4].labelnames = {"tier", "reason"};
  ConnectorCatalog catalog = ConnectorCatalog::BuiltIn();
  auto d = DecodeScenario("offloading", &catalog);
  const auto sums = Sums(Payload(*d, 0, 1), row, d->ctx);
  EXPECT_EQ(sums.count("vllm:acme_offload_tier_usage{}"), 0u);
  EXPECT_EQ(sums.count("vllm:acme_offload_evictions{}"), 0u);
  EXPECT_THAT(d->reporter.ForKey("vllm:acme_offload_tier_usage").at(0).what,
              HasSubstr("labelled values but the metric declares no labelnames"));
  EXPECT_THAT(d->reporter.ForKey("vllm:acme_offload_evictions").at(0).what,
              HasSubstr("label tuple of 1 values, the metric declares 2 labelnames"));
}

}  // namespace
}  // namespace vmetrics
