// SPDX-License-Identifier: Apache-2.0
// Tests of the `_metrics_descriptor` path through StatsRecorder and ConnectorRecorder
// (src/metrics/connector_families.cc): a described connector's families are registered with a
// zero child per engine, bound to the class-name key, refused with a reason (and counted) when
// invalid or colliding, and the built-in path and the descriptor path produce the same exposition
// for a connector described both ways. Fixtures: tests/fixtures/descriptor_v1/ and
// tests/fixtures/kv_*.msgpack (Python-encoded; tools/gen_descriptor_fixtures.py,
// tools/gen_fixtures.py). The full expositions are compared with prometheus_client's by
// tests/cli (tests/golden/descriptor_*.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/metrics_descriptor.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

namespace vmetrics {
namespace {

using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::RecordFixture;
using ::vmetrics::testing::Render;
using Json = nlohmann::json;

constexpr double kCreated = 123.456;

// A recorder on its own registry, with a pinned clock and every log line kept.
struct Rig {
  explicit Rig(RecorderOptions options, const ConnectorCatalog* catalog = nullptr)
      : clock(kCreated), registry(&clock) {
    options.catalog = catalog;
    options.log = [this](const std::string& line) { logs.push_back(line); };
    recorder = std::make_unique<StatsRecorder>(&registry, std::move(options));
  }
  std::string Text() const { return Render(registry); }
  size_t LogsContaining(std::string_view fragment) const {
    return static_cast<size_t>(std::count_if(logs.begin(), logs.end(), [&](const std::string& l) {
      return l.find(fragment) != std::string::npos;
    }));
  }
  std::string AllLogs() const {
    std::string all;
    for (const std::string& l : logs) all += l + "\n";
    return all;
  }

  FixedClock clock;
  Registry registry;
  std::vector<std::string> logs;
  std::unique_ptr<StatsRecorder> recorder;
};

RecorderOptions Options(size_t engines, std::string kv_transfer_config = "") {
  RecorderOptions options;
  options.engine_indexes.clear();
  for (size_t e = 0; e < engines; ++e) options.engine_indexes.push_back(static_cast<int64_t>(e));
  if (!kv_transfer_config.empty()) {
    Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(kv_transfer_config);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) options.connectors = *c;
  }
  return options;
}

std::string Msgpack(const Json& j) {
  std::vector<uint8_t> bytes = Json::to_msgpack(j);
  return std::string(bytes.begin(), bytes.end());
}

// An EngineCoreOutputs message (all 8 positions) whose SchedulerStats carries only `kv`.
std::string Message(int64_t engine, const Json& kv) {
  Json stats = Json::object();
  stats["kv_connector_stats"] = kv;
  return Msgpack(
      Json::array({engine, Json::array(), stats, 1.0, nullptr, nullptr, nullptr, nullptr}));
}

// The kv_connector_stats of a Python-encoded fixture message (tests/fixtures/<name>.msgpack).
Json FixturePayload(const std::string& name) {
  const std::string data = ReadFixture(name + ".msgpack");
  Json message = Json::from_msgpack(data);
  return message.at(2).at("kv_connector_stats");
}

void RecordMessage(StatsRecorder& recorder, const std::string& frame, uint64_t number) {
  std::string_view frames[] = {frame};
  EngineCoreOutputs out;
  Status s = DecodeEngineCoreOutputs(frames, recorder.decode_context(number), &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  recorder.Record(out);
}

// Records the first `count` messages of a concatenated fixture stream.
void RecordFirst(StatsRecorder& recorder, const std::string& fixture, size_t count) {
  const std::string data = ReadFixture(fixture);
  size_t offset = 0;
  for (uint64_t n = 1; n <= count && offset < data.size(); ++n) {
    size_t len = 0;
    ASSERT_TRUE(protocol::ValidateOne(std::string_view(data).substr(offset), &len).ok());
    RecordMessage(recorder, data.substr(offset, len), n);
    offset += len;
  }
}

// The built-in catalog without the row that answers to `class_name`.
ConnectorCatalog CatalogWithout(std::string_view class_name) {
  std::vector<ConnectorRow> rows;
  for (const auto& row : ConnectorCatalog::BuiltIn().rows()) {
    if (ConnectorCatalog::BuiltIn().FindByClassName(class_name) != row.get()) rows.push_back(*row);
  }
  return ConnectorCatalog(std::move(rows));
}

Json DescriptorOf(std::string_view class_name) {
  const ConnectorRow* row = ConnectorCatalog::BuiltIn().FindByClassName(class_name);
  EXPECT_NE(row, nullptr) << class_name;
  return row != nullptr ? Json::parse(DescribeRowAsDescriptorJson(*row)) : Json();
}

Json With(Json payload, const Json& descriptor) {
  payload["_metrics_descriptor"] = descriptor;
  return payload;
}

void ReplaceAll(std::string* text, std::string_view from, std::string_view to) {
  for (size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

// --- Both ways: the built-in row and the same row sent as a descriptor ---------------------

// The same two payloads, once recorded by the built-in row, once by a row registered from the
// built-in row's own descriptor (DescribeRowAsDescriptorJson) in a recorder whose catalog
// lacks the row: the expositions are byte-identical.
void ExpectBothWaysEqual(const std::string& class_name, const std::string& fixture) {
  const Json first = FixturePayload(fixture);
  Json second = first;
  for (auto& [key, value] : second.items()) {
    if (value.is_array()) value = Json::array();  // engine 1 sends empty lists
  }
  Rig builtin(Options(2));
  RecordMessage(*builtin.recorder, Message(0, {{class_name, first}}), 1);
  RecordMessage(*builtin.recorder, Message(1, {{class_name, second}}), 2);

  const ConnectorCatalog without = CatalogWithout(class_name);
  ASSERT_EQ(without.FindByClassName(class_name), nullptr);
  Rig described(Options(2), &without);
  RecordMessage(*described.recorder,
                Message(0, {{class_name, With(first, DescriptorOf(class_name))}}), 1);
  RecordMessage(*described.recorder, Message(1, {{class_name, second}}), 2);

  EXPECT_EQ(builtin.Text(), described.Text());
  EXPECT_EQ(described.LogsContaining("described its metrics with _metrics_descriptor"), 1u)
      << described.AllLogs();
  EXPECT_HAS_LINE(described.Text(), "vmetrics_kv_connector_payloads_total{connector=\"" +
                                        class_name + "\",outcome=\"recorded\"} 2.0");
}

TEST(DescriptorBothWays, HiSparseBuiltInAndDescribedRenderTheSame) {
  ExpectBothWaysEqual("HiSparseConnector", "kv_hisparse");
}

TEST(DescriptorBothWays, Hf3fsBuiltInAndDescribedRenderTheSame) {
  ExpectBothWaysEqual("HF3FSKVConnector", "kv_hf3fs");
}

// A third-party connector that is HiSparse under other names, next to the full built-in
// catalog: its exposition is the built-in one with the names changed.
TEST(DescriptorBothWays, ThirdPartyHiSparseUnderOtherNamesRendersLikeTheBuiltIn) {
  const Json payload = FixturePayload("kv_hisparse");
  Rig builtin(Options(1, R"({"kv_connector":"HiSparseConnector"})"));
  RecordMessage(*builtin.recorder, Message(0, payload), 1);

  Json descriptor = DescriptorOf("HiSparseConnector");
  descriptor["connector_id"] = "ThirdPartyHiSparseConnector";
  for (Json& m : descriptor["metrics"]) {
    std::string name = m["name"];
    ReplaceAll(&name, "vllm:hisparse_", "vllm:tp_hisparse_");
    m["name"] = name;
  }
  Rig third(Options(1, R"({"kv_connector":"ThirdPartyHiSparseConnector"})"));
  RecordMessage(*third.recorder, Message(0, With(payload, descriptor)), 1);

  std::string expected = builtin.Text();
  // The built-in families are registered at startup (configured), the described ones when the
  // descriptor arrives (after vllm:cache_config_info): compare family blocks as sets of lines.
  ReplaceAll(&expected, "vllm:hisparse_", "vllm:tp_hisparse_");
  ReplaceAll(&expected, "connector=\"HiSparseConnector\"",
             "connector=\"ThirdPartyHiSparseConnector\"");
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
      out.push_back(text.substr(start, nl - start));
      start = nl + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(lines(expected), lines(third.Text())) << third.Text();
  EXPECT_LT(third.Text().find("vllm:cache_config_info"), third.Text().find("vllm:tp_hisparse_"))
      << "families described at run time come after the startup families";
}

// --- Registration ------------------------------------------------------------------------------

TEST(DescriptorRegistration, ZeroChildrenForEveryEngineAsSoonAsTheDescriptorArrives) {
  Rig s(Options(3, R"({"kv_connector":"AcmeHiSparseConnector"})"));
  EXPECT_LACKS(s.Text(), "acme_hisparse");
  RecordFirst(*s.recorder, "descriptor_v1/scenario_hisparse_bare.msgpack", 1);  // engine 0 only
  const std::string text = s.Text();
  EXPECT_HAS_LINE(text,
                  R"(vllm:acme_hisparse_cache_hits_total{engine="0",model_name="model"} 8.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:acme_hisparse_cache_hits_total{engine="1",model_name="model"} 0.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:acme_hisparse_cache_hits_total{engine="2",model_name="model"} 0.0)");
  EXPECT_HAS_LINE(text,
                  "# HELP vllm:acme_hisparse_cache_hits_total Number of Acme hot-buffer hits.");
}

TEST(DescriptorRegistration, LaterPayloadsWithoutDescriptorAreIdentifiedByTheNewRow) {
  Rig s(Options(2, R"({"kv_connector":"AcmeHiSparseConnector"})"));
  RecordFixture(*s.recorder, "descriptor_v1/scenario_hisparse_bare.msgpack");
  const std::string text = s.Text();
  EXPECT_HAS_LINE(text,
                  R"(vllm:acme_hisparse_cache_hits_total{engine="0",model_name="model"} 9.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:acme_hisparse_cache_misses_total{engine="0",model_name="model"} 5.0)");
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"AcmeHiSparseConnector\","
                  "outcome=\"recorded\"} 3.0");
  EXPECT_EQ(s.LogsContaining("described its metrics"), 1u) << s.AllLogs();
  EXPECT_EQ(s.LogsContaining("differs"), 0u) << "engine 1 re-sends the same descriptor\n"
                                             << s.AllLogs();
}

TEST(DescriptorRegistration, TheCallersCatalogIsNotChanged) {
  const ConnectorCatalog mine = ConnectorCatalog::BuiltIn();
  Rig s(Options(1, R"({"kv_connector":"AcmeHiSparseConnector"})"), &mine);
  RecordFixture(*s.recorder, "descriptor_v1/scenario_hisparse_bare.msgpack");
  EXPECT_EQ(mine.FindByClassName("AcmeHiSparseConnector"), nullptr);
  EXPECT_TRUE(ConnectorCatalog::BuiltIn().RuntimeRows().empty());
}

// --- Binding to the class-name key -------------------------------------------------------------

TEST(DescriptorBinding, MultiChildIsBoundToItsKeyAndASubclassToItsParentsRow) {
  Rig s(Options(1, R"({"kv_connector":"MultiConnector","kv_connector_extra_config":)"
                   R"({"connectors":[{"kv_connector":"HiSparseConnector"},)"
                   R"({"kv_connector":"AcmeHiSparseConnector"}]}})"));
  RecordFixture(*s.recorder, "descriptor_v1/scenario_hisparse_multi.msgpack");
  RecordFixture(*s.recorder, "descriptor_v1/scenario_hisparse_multi.msgpack");  // again
  const std::string text = s.Text();
  // AcmeHiSparseConnector's descriptor says connector_id "AcmeHiSparse": bound to the key.
  EXPECT_HAS_LINE(text,
                  R"(vllm:acme_hisparse_cache_hits_total{engine="0",model_name="model"} 20.0)");
  // MyHiSparseConnector sends HiSparse's descriptor: it feeds HiSparse's families.
  EXPECT_HAS_LINE(text, R"(vllm:hisparse_cache_hits_total{engine="0",model_name="model"} 24.0)");
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"MyHiSparseConnector\","
                  "outcome=\"recorded\"} 4.0");
  EXPECT_EQ(s.LogsContaining("descriptor connector_id 'AcmeHiSparse' differs from the class name"),
            1u)
      << "warned once per (class, id)\n"
      << s.AllLogs();
  EXPECT_EQ(s.LogsContaining("MyHiSparseConnector sends the _metrics_descriptor of "
                             "HiSparseConnector"),
            1u)
      << s.AllLogs();
}

// --- Refusals: logged once with the reason, counted, never fatal --------------------------------

TEST(DescriptorOutcomes, InvalidAndCollidingDescriptorsAreCountedAndLoggedOnce) {
  Rig s(Options(1, R"({"kv_connector":"MultiConnector","kv_connector_extra_config":)"
                   R"({"connectors":[{"kv_connector":"HF3FSKVConnector"}]}})"));
  RecordFixture(*s.recorder, "descriptor_v1/scenario_invalid.msgpack");
  RecordFixture(*s.recorder, "descriptor_v1/scenario_invalid.msgpack");
  const std::string text = s.Text();
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"InvalidVersion2Connector\","
                  "outcome=\"invalid_descriptor\"} 4.0")
      << "later data-only payloads of a refused connector count as invalid_descriptor too";
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"ConflictFrontendConnector\","
                  "outcome=\"invalid_descriptor\"} 4.0");
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"AcmeMysteryConnector\","
                  "outcome=\"unknown_connector\"} 4.0");
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"AcmeGoodConnector\","
                  "outcome=\"recorded\"} 4.0");
  EXPECT_HAS_LINE(text, R"(vllm:acme_good_hits_total{engine="0",model_name="model"} 12.0)");
  EXPECT_HAS_LINE(text, R"(vllm:num_requests_running{engine="0",model_name="model"} 0.0)")
      << "the frontend family is untouched";
  EXPECT_EQ(s.LogsContaining("descriptor refused: descriptor_version: expected 1, got 2"), 1u)
      << s.AllLogs();
  EXPECT_EQ(s.LogsContaining("descriptor refused: family vllm:num_requests_running conflicts "
                             "with the registered family vllm:num_requests_running"),
            1u)
      << s.AllLogs();
  EXPECT_EQ(s.LogsContaining("conflicts with the registered family vllm:prompt_tokens (both "
                             "expose vllm:prompt_tokens_created)"),
            1u)
      << s.AllLogs();
  EXPECT_EQ(s.LogsContaining("descriptor refused: family vllm:acme_good_hits conflicts"), 1u)
      << "a second connector may not take a described connector's family\n"
      << s.AllLogs();
  EXPECT_EQ(s.LogsContaining("connector AcmeMysteryConnector, no connector row"), 1u)
      << s.AllLogs();
}

TEST(DescriptorOutcomes, ABuiltInRowIsKeptWhenItsDescriptorDiffers) {
  Rig s(Options(2, R"({"kv_connector":"HiSparseConnector"})"));
  RecordFixture(*s.recorder, "descriptor_v1/scenario_hisparse_builtin.msgpack");
  RecordFixture(*s.recorder, "descriptor_v1/scenario_hisparse_builtin.msgpack");
  EXPECT_EQ(s.LogsContaining("descriptor differs from the connector's built-in row (4 metrics vs "
                             "3); the row is kept"),
            1u)
      << s.AllLogs();
  EXPECT_LACKS(s.Text(), "resident_blocks");
  EXPECT_HAS_LINE(s.Text(),
                  "vmetrics_kv_connector_payloads_total{connector=\"HiSparseConnector\","
                  "outcome=\"recorded\"} 6.0");
}

TEST(DescriptorOutcomes, AValidDescriptorAfterARefusedOneIsAdopted) {
  Rig s(Options(1, R"({"kv_connector":"AcmeConnector"})"));
  Json bad = Json::parse(R"({"descriptor_version": 2, "connector_id": "AcmeConnector",
                             "metrics": []})");
  Json good = Json::parse(R"({"descriptor_version": 1, "connector_id": "AcmeConnector",
      "metrics": [{"name": "vllm:acme_hits", "type": "counter", "documentation": "Hits.",
                   "samples_path": "hits", "sample_kind": "inc_by_sum_u64"}]})");
  RecordMessage(*s.recorder, Message(0, {{"hits", {1}}, {"_metrics_descriptor", bad}}), 1);
  RecordMessage(*s.recorder, Message(0, {{"hits", {1}}}), 2);
  RecordMessage(*s.recorder, Message(0, {{"hits", {2}}, {"_metrics_descriptor", good}}), 3);
  RecordMessage(*s.recorder, Message(0, {{"hits", {3}}}), 4);
  const std::string text = s.Text();
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"AcmeConnector\","
                  "outcome=\"invalid_descriptor\"} 2.0");
  EXPECT_HAS_LINE(text,
                  "vmetrics_kv_connector_payloads_total{connector=\"AcmeConnector\","
                  "outcome=\"recorded\"} 2.0");
  EXPECT_HAS_LINE(text, R"(vllm:acme_hits_total{engine="0",model_name="model"} 5.0)");
}

// --- Threads: decode and record on several threads while another renders -----------------------

TEST(DescriptorThreads, RecordingNewDescriptorsWhileRenderingIsSafe) {
  Rig s(Options(2));
  constexpr int kConnectors = 24;
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    while (!done.load()) (void)s.Text();
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kConnectors; ++i) {
        const std::string id = "Acme" + std::to_string(i) + "Connector";
        Json descriptor = {{"descriptor_version", 1},
                           {"connector_id", id},
                           {"metrics", Json::array({{{"name", "vllm:acme" + std::to_string(i)},
                                                     {"type", "counter"},
                                                     {"documentation", "Acme."},
                                                     {"samples_path", "hits"},
                                                     {"sample_kind", "inc_by_sum_u64"}}})}};
        Json payload = {{"hits", {1}}, {"_metrics_descriptor", descriptor}};
        RecordMessage(*s.recorder, Message(t, {{id, payload}}), static_cast<uint64_t>(i + 1));
      }
    });
  }
  for (std::thread& w : writers) w.join();
  done.store(true);
  renderer.join();
  const std::string text = s.Text();
  for (int i = 0; i < kConnectors; ++i) {
    const std::string name = "vllm:acme" + std::to_string(i) + "_total";
    EXPECT_HAS_LINE(text, name + R"({engine="0",model_name="model"} 1.0)");
    EXPECT_HAS_LINE(text, name + R"({engine="1",model_name="model"} 1.0)");
  }
}

}  // namespace
}  // namespace vmetrics
