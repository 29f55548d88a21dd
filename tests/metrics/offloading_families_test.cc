// SPDX-License-Identifier: Apache-2.0
// Tests of the OffloadingConnector row's families beyond the flat ones
// (src/metrics/connector_catalog.cc, recorded by src/metrics/connector_families.cc and walked by
// src/metrics/connector_walk.cc): the deprecated transfer_type families (children for every
// engine at registration, engine-major; fed from the unlabelled load and store values only while
// kv_connector_extra_config.spec_name names a CPU offloading spec) and the config-info gauge
// (label names declared by the first `info` map, later maps aligned; hostile maps counted and
// skipped), and the offloading spec's families (registered between the deprecated and the flat
// ones only when the configuration declares them: spec_name, store_threshold; fed per label
// tuple). The byte-for-byte exposition is tests/golden/offloading_*.txt (tools/gen_goldens.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test_util.h"
#include "tests/metrics/connector_fixture.h"
#include "vmetrics/connector_catalog.h"
#include "vmetrics/connector_walk.h"
#include "vmetrics/metrics_descriptor.h"
#include "vmetrics/recorder.h"
#include "vmetrics/registry.h"

namespace vmetrics {
namespace {

using ::vmetrics::testing::Render;

// --- A minimal msgpack writer: typed payloads key maps by arrays, which JSON cannot ----------

std::string Be(uint64_t v, int bytes) {
  std::string out;
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}
std::string Map(size_t n) { return std::string(1, static_cast<char>(0xde)) + Be(n, 2); }
std::string Array(size_t n) { return std::string(1, static_cast<char>(0xdc)) + Be(n, 2); }
std::string Str(std::string_view s) {
  return std::string(1, static_cast<char>(0xda)) + Be(s.size(), 2) + std::string(s);
}
std::string Int(int64_t v) {
  return std::string(1, static_cast<char>(0xd3)) + Be(static_cast<uint64_t>(v), 8);
}
std::string Float(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return std::string(1, static_cast<char>(0xcb)) + Be(bits, 8);
}
std::string Nil() { return std::string(1, static_cast<char>(0xc0)); }
std::string Bool(bool b) { return std::string(1, static_cast<char>(b ? 0xc3 : 0xc2)); }

// `data` entries: family name -> the value of its unlabelled tuple (already encoded).
using Data = std::vector<std::pair<std::string, std::string>>;

// An OffloadingConnectorStats payload {types, data, info}; `info` is encoded (Nil() for None).
std::string Payload(const Data& data, const std::string& info) {
  std::string types = Map(data.size()), values = Map(data.size());
  for (const auto& [name, value] : data) {
    const bool list = static_cast<uint8_t>(value[0]) == 0xdc;
    types += Str(name) + Str(list ? "histogram" : "counter");
    values += Str(name) + Map(1) + Array(0) + value;
  }
  return Map(3) + Str("types") + types + Str("data") + values + Str("info") + info;
}

// An EngineCoreOutputs message (8 positions) whose SchedulerStats carries only the payload.
std::string Message(int64_t engine, const std::string& kv_connector_stats) {
  return Array(8) + Int(engine) + Array(0) + Map(1) + Str("kv_connector_stats") +
         kv_connector_stats + Float(1.0) + Nil() + Nil() + Nil() + Nil();
}

std::string InfoMap(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = Map(entries.size());
  for (const auto& [k, v] : entries) out += Str(k) + v;
  return out;
}

// A recorder on its own registry, with a pinned clock and every log line kept.
struct Rig {
  explicit Rig(size_t engines, const std::string& kv_transfer_config)
      : clock(1.0), registry(&clock) {
    RecorderOptions options;
    options.engine_indexes.clear();
    for (size_t e = 0; e < engines; ++e) options.engine_indexes.push_back(static_cast<int64_t>(e));
    if (!kv_transfer_config.empty()) {
      Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(kv_transfer_config);
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      if (c.ok()) options.connectors = *c;
    }
    options.log = [this](const std::string& line) { logs.push_back(line); };
    recorder = std::make_unique<StatsRecorder>(&registry, std::move(options));
  }
  void Record(const std::string& frame) {
    std::string_view frames[] = {frame};
    EngineCoreOutputs out;
    Status s = DecodeEngineCoreOutputs(frames, recorder->decode_context(++messages), &out);
    ASSERT_TRUE(s.ok()) << s.ToString();
    recorder->Record(out);
  }
  std::string Text() const { return Render(registry); }
  // The value of the sample line that starts with `sample` ("name{labels}"), or -1.
  double Value(const std::string& sample) const {
    const std::string text = Text();
    const size_t at = text.find("\n" + sample + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + 1 + sample.size() + 1));
  }
  bool Logged(std::string_view fragment) const {
    return std::ranges::any_of(
        logs, [&](const std::string& l) { return l.find(fragment) != std::string::npos; });
  }

  FixedClock clock;
  Registry registry;
  std::vector<std::string> logs;
  std::unique_ptr<StatsRecorder> recorder;
  uint64_t messages = 0;
};

constexpr const char* kOffloading = R"({"kv_connector":"OffloadingConnector"})";

std::string Bytes(const char* name, const char* engine, const char* transfer_type) {
  return std::string(name) + "_total{engine=\"" + engine +
         "\",model_name=\"model\",transfer_type=\"" + transfer_type + "\"}";
}

// A payload that feeds every load and store family once.
std::string LoadAndStore() {
  return Payload({{"vllm:kv_offload_load_bytes", Int(100)},
                  {"vllm:kv_offload_load_time", Float(0.25)},
                  {"vllm:kv_offload_load_size", Array(1) + Float(2e6)},
                  {"vllm:kv_offload_store_bytes", Int(50)},
                  {"vllm:kv_offload_store_time", Float(0.5)},
                  {"vllm:kv_offload_store_size", Array(2) + Float(3e6) + Float(4e6)}},
                 Nil());
}

TEST(OffloadingDeprecated, ChildrenForEveryEngineAtRegistrationEngineMajor) {
  Rig rig(2, kOffloading);
  const std::string text = rig.Text();
  const size_t e0c = text.find(Bytes("vllm:kv_offload_total_bytes", "0", "CPU_to_GPU"));
  const size_t e0g = text.find(Bytes("vllm:kv_offload_total_bytes", "0", "GPU_to_CPU"));
  const size_t e1c = text.find(Bytes("vllm:kv_offload_total_bytes", "1", "CPU_to_GPU"));
  const size_t e1g = text.find(Bytes("vllm:kv_offload_total_bytes", "1", "GPU_to_CPU"));
  ASSERT_NE(e1g, std::string::npos) << text;
  EXPECT_LT(e0c, e0g);
  EXPECT_LT(e0g, e1c) << "engine outer, transfer_type inner, as Python's nested loop";
  EXPECT_LT(e1c, e1g);
  // Registration order: the deprecated trio, the flat families, then the config info.
  const size_t total_time = text.find("# TYPE vllm:kv_offload_total_time_total counter");
  const size_t size = text.find("# TYPE vllm:kv_offload_size histogram");
  const size_t load = text.find("# TYPE vllm:kv_offload_load_bytes_total counter");
  const size_t failure = text.find("# TYPE vllm:kv_offload_allocation_failure_total counter");
  const size_t info = text.find("# TYPE vllm:kv_offload_config_info gauge");
  ASSERT_NE(info, std::string::npos) << text;
  EXPECT_LT(e1g, total_time);
  EXPECT_LT(total_time, size);
  EXPECT_LT(size, load);
  EXPECT_LT(failure, info);
  EXPECT_EQ(text.find("vllm:kv_offload_config_info{"), std::string::npos)
      << "no info child before an info map arrives";
  EXPECT_EQ(rig.Value("vllm:kv_offload_size_count{engine=\"1\",model_name=\"model\","
                      "transfer_type=\"GPU_to_CPU\"}"),
            0.0);
}

TEST(OffloadingDeprecated, DefaultSpecMirrorsLoadAsCpuToGpuAndStoreAsGpuToCpu) {
  Rig rig(1, kOffloading);
  rig.Record(Message(0, LoadAndStore()));
  EXPECT_EQ(rig.Value(Bytes("vllm:kv_offload_total_bytes", "0", "CPU_to_GPU")), 100.0);
  EXPECT_EQ(rig.Value(Bytes("vllm:kv_offload_total_bytes", "0", "GPU_to_CPU")), 50.0);
  EXPECT_EQ(rig.Value(Bytes("vllm:kv_offload_total_time", "0", "CPU_to_GPU")), 0.25);
  EXPECT_EQ(rig.Value(Bytes("vllm:kv_offload_total_time", "0", "GPU_to_CPU")), 0.5);
  EXPECT_EQ(rig.Value("vllm:kv_offload_size_count{engine=\"0\",model_name=\"model\","
                      "transfer_type=\"GPU_to_CPU\"}"),
            2.0);
  EXPECT_EQ(rig.Value("vllm:kv_offload_size_sum{engine=\"0\",model_name=\"model\","
                      "transfer_type=\"CPU_to_GPU\"}"),
            2e6);
  // The flat families are fed as before.
  EXPECT_EQ(rig.Value("vllm:kv_offload_load_bytes_total{engine=\"0\",model_name=\"model\"}"),
            100.0);
  EXPECT_EQ(rig.Value("vllm:kv_offload_store_size_count{engine=\"0\",model_name=\"model\"}"), 2.0);
}

TEST(OffloadingDeprecated, FedOnlyForCpuOffloadingSpecsByConfiguration) {
  struct Case {
    std::string config;
    bool fed;
  };
  const Case cases[] = {
      {R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"CPUOffloadingSpec"}})",
       true},
      {R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec"}})",
       true},
      {R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"AcmeSpec","spec_module_path":"acme"}})",
       false},
      // A MultiConnector child's own extra config decides.
      {R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"spec_name":"CPUOffloadingSpec","connectors":[{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"AcmeSpec"}}]}})",
       false},
      // Not a string: vLLM's factory would not find it; taken as absent (the default spec).
      {R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":7}})",
       true},
      {"", true},  // no connector configured: recognised by shape, vLLM's default spec
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    Rig rig(1, c.config);
    const std::string payload = LoadAndStore();
    rig.Record(Message(0, c.config.find("MultiConnector") != std::string::npos
                              ? Map(1) + Str("OffloadingConnector") + payload
                              : payload));
    EXPECT_EQ(rig.Value(Bytes("vllm:kv_offload_total_bytes", "0", "CPU_to_GPU")),
              c.fed ? 100.0 : 0.0);
    EXPECT_EQ(rig.Value(Bytes("vllm:kv_offload_total_time", "0", "GPU_to_CPU")), c.fed ? 0.5 : 0.0);
    EXPECT_EQ(rig.Value("vllm:kv_offload_load_bytes_total{engine=\"0\",model_name=\"model\"}"),
              100.0)
        << "the flat families are fed whatever the spec";
  }
}

TEST(OffloadingDeprecated, AWrongValueIsReportedOnceNotOncePerFamilyReadingIt) {
  Rig rig(1, kOffloading);
  rig.Record(Message(0, Payload({{"vllm:kv_offload_load_size", Array(1) + Str("big")}}, Nil())));
  EXPECT_EQ(rig.Value("vmetrics_wire_values_skipped_total{reason=\"wrong_type\"}"), 1.0);
  EXPECT_EQ(rig.Value("vllm:kv_offload_size_count{engine=\"0\",model_name=\"model\","
                      "transfer_type=\"CPU_to_GPU\"}"),
            0.0);
}

const char* const kInfoSample = "vllm:kv_offload_config_info{";

TEST(OffloadingConfigInfo, FirstMapDeclaresTheLabelsLaterMapsAreAligned) {
  Rig rig(2, kOffloading);
  rig.Record(Message(0, Payload({}, InfoMap({{"cpu_num_chunks", Int(4096)},
                                             {"cpu_tier", Str("dram")},
                                             {"cpu_capacity_tokens_at_max_len", Str("None")}}))));
  // Engine 1: a declared name missing, one more name, other types that str() prints.
  rig.Record(Message(1, Payload({}, InfoMap({{"cpu_tier", Bool(true)},
                                             {"cpu_extra", Str("x")},
                                             {"cpu_num_chunks", Float(0.5)}}))));
  const std::string text = rig.Text();
  EXPECT_NE(text.find("vllm:kv_offload_config_info{cpu_capacity_tokens_at_max_len=\"None\","
                      "cpu_num_chunks=\"4096\",cpu_tier=\"dram\",engine=\"0\","
                      "model_name=\"model\"} 1.0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:kv_offload_config_info{cpu_capacity_tokens_at_max_len=\"\","
                      "cpu_num_chunks=\"0.5\",cpu_tier=\"True\",engine=\"1\","
                      "model_name=\"model\"} 1.0"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cpu_extra"), std::string::npos) << "an undeclared name is dropped";
  EXPECT_TRUE(rig.Logged("cpu_extra")) << "and logged";
  EXPECT_TRUE(rig.Logged("cpu_capacity_tokens_at_max_len")) << "a missing one is logged too";
  // The same map again keeps the same child; None leaves the gauge alone.
  rig.Record(Message(0, Payload({}, InfoMap({{"cpu_num_chunks", Int(4096)},
                                             {"cpu_tier", Str("dram")},
                                             {"cpu_capacity_tokens_at_max_len", Str("None")}}))));
  rig.Record(Message(1, Payload({}, Nil())));
  const std::string after = rig.Text();
  size_t children = 0;
  for (size_t at = after.find(kInfoSample); at != std::string::npos;
       at = after.find(kInfoSample, at + 1)) {
    ++children;
  }
  EXPECT_EQ(children, 2u) << after;
}

TEST(OffloadingConfigInfo, ValuesAsPythonStrPrintsThem) {
  struct Case {
    std::string encoded;
    const char* expected;
  };
  const Case cases[] = {
      {Float(100.0), "100.0"},
      {Float(1e16), "1e+16"},
      {Float(1.5e-05), "1.5e-05"},
      {Float(0.0001), "0.0001"},
      {Float(-2.5), "-2.5"},
      {Float(123456.789), "123456.789"},
      {Int(-7), "-7"},
      {Bool(false), "False"},
      {Nil(), "None"},
      {Str("lru"), "lru"},
      {std::string(1, '\xcf') + Be(UINT64_MAX, 8), "18446744073709551615"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    Rig rig(1, kOffloading);
    rig.Record(Message(0, Payload({}, InfoMap({{"v", c.encoded}}))));
    EXPECT_EQ(rig.Value(std::string(
                            "vllm:kv_offload_config_info{engine=\"0\",model_name=\"model\",v=\"") +
                        c.expected + "\"}"),
              1.0)
        << rig.Text();
  }
}

TEST(OffloadingConfigInfo, HostileMapsAreCountedAndSkippedNeverFatal) {
  Rig rig(1, kOffloading);
  // A value of a type str() would not print as a fact: the whole map is skipped.
  rig.Record(
      Message(0, Payload({}, InfoMap({{"a", Str("x")}, {"b", Array(2) + Int(1) + Int(2)}}))));
  // Not a map at all.
  rig.Record(Message(0, Payload({}, Int(3))));
  // A key that is not a string.
  rig.Record(Message(0, Payload({}, Map(1) + Int(1) + Str("x"))));
  EXPECT_EQ(rig.Value("vmetrics_wire_values_skipped_total{reason=\"wrong_type\"}"), 3.0);
  EXPECT_EQ(rig.Text().find(kInfoSample), std::string::npos) << "nothing declared yet";
  // Names that cannot be label names are dropped from the declaration; the rest is kept.
  rig.Record(Message(0, Payload({}, InfoMap({{"bad-name", Str("1")},
                                             {"engine", Str("2")},
                                             {"__reserved", Str("3")},
                                             {"good", Str("4")},
                                             {"good", Str("5")}}))));
  EXPECT_EQ(rig.Value("vllm:kv_offload_config_info{engine=\"0\",good=\"5\",model_name=\"model\"}"),
            1.0)
      << rig.Text();
  EXPECT_TRUE(rig.Logged("bad-name"));
  // The payloads themselves were recorded (the flat families' data is independent of info).
  EXPECT_EQ(rig.Value("vmetrics_kv_connector_payloads_total{connector=\"OffloadingConnector\","
                      "outcome=\"recorded\"}"),
            4.0);
}

TEST(OffloadingConfigInfo, AtMostThirtyTwoLabelNamesAreDeclared) {
  Rig rig(1, kOffloading);
  std::vector<std::pair<std::string, std::string>> many;
  many.reserve(40);
  for (int i = 0; i < 40; ++i) many.emplace_back("k" + std::to_string(i), Int(i));
  rig.Record(Message(0, Payload({}, InfoMap(many))));
  const std::string text = rig.Text();
  EXPECT_NE(text.find("k31=\"31\""), std::string::npos) << text;
  EXPECT_EQ(text.find("k32="), std::string::npos) << "at most 32 names are declared";
}

// --- The walk of Python-encoded payloads (tests/fixtures/kv_offloading*.msgpack) -----------

struct WalkedSample {
  std::string metric;  // name{const labels}
  std::vector<double> values;
  std::vector<std::pair<std::string, std::string>> info;  // kSetInfo: name -> value
};

std::vector<WalkedSample> WalkFixture(const testing::Decoded& d) {
  std::vector<WalkedSample> out;
  const IdentifiedPayload& p = testing::Identified(d, 0);
  EXPECT_NE(p.row, nullptr);
  if (p.row == nullptr) return out;
  ForEachConnectorSample(p.payload, *p.row, d.ctx, [&](const ConnectorSample& s) {
    const MetricDef& m = p.row->metrics[s.metric_index];
    WalkedSample w;
    w.metric = m.name;
    for (const auto& [unused, v] : m.const_labels) w.metric += "{" + v + "}";
    w.values.assign(s.values.begin(), s.values.end());
    for (size_t i = 0; i < s.extra_label_names.size(); ++i) {
      w.info.emplace_back(s.extra_label_names[i], s.extra_label_values[i]);
    }
    out.push_back(std::move(w));
  });
  return out;
}

const WalkedSample* Find(const std::vector<WalkedSample>& samples, const std::string& metric) {
  for (const WalkedSample& s : samples) {
    if (s.metric == metric) return &s;
  }
  return nullptr;
}

TEST(OffloadingWalk, MirrorsAndInfoComeOutOfThePythonEncodedPayload) {
  auto d = testing::DecodeFixture("kv_offloading_info");
  const std::vector<WalkedSample> samples = WalkFixture(*d);
  const WalkedSample* c2g = Find(samples, "vllm:kv_offload_total_bytes{CPU_to_GPU}");
  const WalkedSample* g2c = Find(samples, "vllm:kv_offload_total_bytes{GPU_to_CPU}");
  const WalkedSample* size = Find(samples, "vllm:kv_offload_size{CPU_to_GPU}");
  const WalkedSample* info = Find(samples, "vllm:kv_offload_config_info");
  ASSERT_NE(c2g, nullptr);
  ASSERT_NE(g2c, nullptr);
  ASSERT_NE(size, nullptr);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(c2g->values, std::vector<double>{2097152.0});
  EXPECT_EQ(g2c->values, std::vector<double>{1048576.0});
  EXPECT_EQ(size->values, std::vector<double>{2097152.0});
  EXPECT_EQ(Find(samples, "vllm:kv_offload_size{GPU_to_CPU}"), nullptr) << "no store sizes sent";
  EXPECT_EQ(info->values, std::vector<double>{1.0});
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"cpu_num_chunks", "4096"},
      {"cpu_blocks_per_chunk", "1"},
      {"cpu_kv_bytes_per_chunk", "2097152"},
      {"cpu_capacity_tokens_at_max_len", "None"}};
  EXPECT_EQ(info->info, expected) << "names and values in the payload's order";
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(OffloadingWalk, AClosedGateProducesNoDeprecatedSample) {
  Result<ConnectorConfig> config = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"Other"}})");
  ASSERT_TRUE(config.ok());
  auto d = testing::DecodeFixture("kv_offloading_info", &*config);
  const std::vector<WalkedSample> samples = WalkFixture(*d);
  for (const WalkedSample& s : samples) {
    EXPECT_EQ(s.metric.find('{'), std::string::npos) << s.metric << " is gated off";
  }
  EXPECT_NE(Find(samples, "vllm:kv_offload_load_bytes"), nullptr);
  EXPECT_NE(Find(samples, "vllm:kv_offload_config_info"), nullptr) << "info is not gated";
}

TEST(OffloadingWalk, HostileInfoIsReportedAsWrongTypeAndTheDataStillWalks) {
  // Three messages, one hostile `info` each.
  const std::string data = testing::ReadFixture(std::string("kv_offloading_hostile_info.msgpack"));
  size_t offset = 0;
  int messages = 0;
  while (offset < data.size()) {
    size_t len = 0;
    ASSERT_TRUE(protocol::ValidateOne(std::string_view(data).substr(offset), &len).ok());
    testing::RecordingReporter reporter;
    DecodeContext ctx;
    ctx.reporter = &reporter;
    EngineCoreOutputs out;
    // A view into `data`: the decoded payloads point into the message's bytes, which must
    // outlive them.
    ASSERT_TRUE(testing::DecodeOne(std::string_view(data).substr(offset, len), ctx, &out).ok());
    offset += len;
    ++messages;
    IdentifiedPayloads ids;
    IdentifyConnectorPayloads(*out.scheduler_stats->kv_connector_stats, ConnectorCatalog::BuiltIn(),
                              ctx, &ids);
    ASSERT_EQ(ids.payloads.size(), 1u);
    bool info = false, load = false;
    ForEachConnectorSample(
        ids.payloads[0].payload, *ids.payloads[0].row, ctx, [&](const ConnectorSample& s) {
          const std::string& name = ids.payloads[0].row->metrics[s.metric_index].name;
          info = info || name == "vllm:kv_offload_config_info";
          load = load || name == "vllm:kv_offload_load_bytes";
        });
    EXPECT_FALSE(info) << "message " << messages;
    EXPECT_TRUE(load) << "message " << messages;
    ASSERT_EQ(reporter.problems.size(), 1u) << reporter.Dump();
    EXPECT_EQ(reporter.problems[0].key, "info");
    EXPECT_NE(reporter.problems[0].what.find("skipped"), std::string::npos) << reporter.Dump();
  }
  EXPECT_EQ(messages, 3);
}

TEST(OffloadingRow, ItsDescriptorStillMatchesTheBuiltInRow) {
  const ConnectorRow* row = ConnectorCatalog::BuiltIn().FindByClassName("OffloadingConnector");
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(ValidateRow(*row).ok()) << ValidateRow(*row).ToString();
  // The descriptor protocol cannot say the deprecated or info metrics: the document lists the
  // nine flat ones, and reads back as the same row.
  const std::string json = DescribeRowAsDescriptorJson(*row);
  EXPECT_EQ(json.find("kv_offload_total_bytes"), std::string::npos);
  EXPECT_EQ(json.find("kv_offload_config_info"), std::string::npos);
  EXPECT_NE(json.find("kv_offload_allocation_failure"), std::string::npos);
  ConnectorRow flat = *row;
  std::erase_if(flat.metrics, [](const MetricDef& m) { return !m.descriptor_expressible(); });
  EXPECT_EQ(flat.metrics.size(), 9u);
  std::string difference;
  EXPECT_TRUE(SameMetrics(flat, *row, &difference)) << difference;
  ConnectorRow fewer = flat;
  fewer.metrics.pop_back();
  EXPECT_FALSE(SameMetrics(fewer, *row, &difference));
}

TEST(OffloadingRow, ValidateRowRefusesMisusedNewFields) {
  ConnectorRow row;
  row.id = "Acme";
  MetricDef info;
  info.name = "acme_info";
  info.type = MetricType::kGauge;
  info.documentation = "Info.";
  info.samples_path = "info";
  info.sample_kind = SampleKind::kSetInfo;
  row.metrics = {info};
  EXPECT_TRUE(ValidateRow(row).ok());
  row.metrics[0].const_labels = {{"k", "v"}};
  EXPECT_FALSE(ValidateRow(row).ok()) << "set_info takes its labels from the payload only";
  row.metrics[0].const_labels.clear();
  row.metrics[0].type = MetricType::kCounter;
  EXPECT_FALSE(ValidateRow(row).ok()) << "set_info is a gauge kind";
  row.metrics[0] = info;
  row.metrics[0].sample_kind = SampleKind::kSetF64;
  row.metrics[0].fed_when = ExtraConfigGate{"spec_name", "A", {}};
  EXPECT_FALSE(ValidateRow(row).ok()) << "a gate needs its values";
  row.metrics[0].fed_when->values = {"A"};
  EXPECT_TRUE(ValidateRow(row).ok());
  row.metrics[0].labelnames = {"tier"};
  row.metrics[0].eager = true;
  EXPECT_FALSE(ValidateRow(row).ok()) << "eager children need fixed labels";
  row.metrics[0] = info;
  row.metrics[0].sample_kind = SampleKind::kSetF64;
  row.metrics[0].registered_when = {ExtraConfigGate{"store_threshold", "0", {}, std::nullopt}};
  EXPECT_FALSE(ValidateRow(row).ok()) << "a registration gate needs values or a bound";
  row.metrics[0].registered_when[0].int_at_least = 2;
  EXPECT_TRUE(ValidateRow(row).ok());
  row.metrics[0].registered_when[0].values = {"2"};
  EXPECT_FALSE(ValidateRow(row).ok()) << "values or a bound, not both";
  MetricDef twin = row.metrics[0];
  twin.registered_when.clear();
  row.metrics[0].registered_when[0].values.clear();
  row.metrics.push_back(twin);
  EXPECT_FALSE(ValidateRow(row).ok()) << "one family, registered under one set of gates";
}

TEST(ConnectorConfig, KeepsTheStringExtraConfigOfEachConfiguredConnector) {
  Result<ConnectorConfig> top = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"X","cpu_bytes_to_use":1,"block_size":"16"}})");
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->ExtraConfigString("OffloadingConnector", "spec_name"), "X");
  EXPECT_EQ(top->ExtraConfigString("OffloadingConnector", "block_size"), "16");
  EXPECT_FALSE(top->ExtraConfigString("OffloadingConnector", "cpu_bytes_to_use"))
      << "only string values are kept";
  EXPECT_FALSE(top->ExtraConfigString("NixlConnector", "spec_name"));
  Result<ConnectorConfig> multi = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
      R"({"kv_connector":"NixlConnector"},)"
      R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"Y"}},)"
      R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"spec_name":"Z"}}]}})");
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(multi->ExtraConfigString("OffloadingConnector", "spec_name"), "Y")
      << "the first configuration of a class name wins";
  EXPECT_FALSE(multi->ExtraConfigString("NixlConnector", "spec_name"));
  EXPECT_FALSE(multi->ExtraConfigString("MultiConnector", "connectors"));
}

// --- The offloading spec's families -----------------------------------------------------------

// One `data` entry with its type: label tuples (each already an encoded array) to values.
struct Typed {
  std::string name;
  const char* type;
  std::vector<std::pair<std::string, std::string>> values;
};

std::string TypedPayload(const std::vector<Typed>& entries) {
  std::string types = Map(entries.size()), data = Map(entries.size());
  for (const Typed& e : entries) {
    types += Str(e.name) + Str(e.type);
    data += Str(e.name) + Map(e.values.size());
    for (const auto& [tuple, value] : e.values) data += tuple + value;
  }
  return Map(2) + Str("types") + types + Str("data") + data;
}
std::string Tier(std::string_view value) { return Array(1) + Str(value); }

bool Declares(const std::string& text, const std::string& family) {
  return text.find("# TYPE " + family + " ") != std::string::npos;
}

constexpr const char* kCpuSpecFamilies[] = {
    "vllm:kv_offload_cpu_cache_usage_perc", "vllm:kv_offload_cpu_cache_write_usage_perc",
    "vllm:kv_offload_cpu_cache_read_usage_perc", "vllm:kv_offload_cpu_allocation_size"};

TEST(OffloadingSpecFamilies, CpuSpecDeclaresItsFourBetweenTheDeprecatedAndTheFlatFamilies) {
  Rig rig(1, kOffloading);
  const std::string text = rig.Text();
  const size_t size = text.find("# TYPE vllm:kv_offload_size histogram");
  const size_t load = text.find("# TYPE vllm:kv_offload_load_bytes_total counter");
  size_t previous = size;
  for (const char* family : kCpuSpecFamilies) {
    const size_t at = text.find(std::string("# TYPE ") + family + " ");
    ASSERT_NE(at, std::string::npos) << family << "\n" << text;
    EXPECT_LT(previous, at) << family << ": in the spec's order, after the deprecated trio";
    previous = at;
  }
  EXPECT_LT(previous, load) << "the spec's families come before the connector's own";
  EXPECT_FALSE(Declares(text, "vllm:kv_offload_stores_skipped_total"));
  EXPECT_EQ(text.find("vllm:kv_offload_tiering_"), std::string::npos) << text;
  EXPECT_EQ(text.find("vllm:kv_offload_cpu_cache_usage_perc{"), std::string::npos)
      << "children appear on the first value, as OffloadPromMetrics creates them";
}

TEST(OffloadingSpecFamilies, StoresSkippedIsDeclaredFromAStoreThresholdOfTwoAsPythonIntReadsIt) {
  struct Case {
    std::string extra;
    bool declared;
  };
  const Case cases[] = {
      {"{}", false},
      {R"({"store_threshold":1})", false},
      {R"({"store_threshold":2})", true},
      {R"({"store_threshold":"3"})", true},
      {R"({"store_threshold":" 2 "})", true},
      {R"({"store_threshold":2.9})", true},
      {R"({"store_threshold":1.9})", false},
      {R"({"store_threshold":true})", false},
      {R"({"store_threshold":"2.5"})", false},  // int() refuses it: vLLM would not start
      {R"({"store_threshold":2,"spec_name":"TieringOffloadingSpec"})", true},
      {R"({"store_threshold":2,"spec_name":"AcmeSpec","spec_module_path":"acme"})", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    Rig rig(
        1, R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":)" + c.extra + "}");
    rig.Record(Message(
        0, TypedPayload({{"vllm:kv_offload_stores_skipped", "counter", {{Array(0), Int(3)}}}})));
    const std::string text = rig.Text();
    EXPECT_EQ(Declares(text, "vllm:kv_offload_stores_skipped_total"), c.declared) << text;
    EXPECT_EQ(rig.Value("vllm:kv_offload_stores_skipped_total{engine=\"0\",model_name=\"model\"}"),
              c.declared ? 3.0 : -1.0);
    EXPECT_EQ(text.find("vmetrics_wire_values_skipped_total{reason=\"wrong_type\"} 1"),
              std::string::npos)
        << "an entry of an undeclared family is passed over, not reported";
  }
}

TEST(OffloadingSpecFamilies, AMultiConnectorChildsExtraConfigChoosesTheSpec) {
  Rig rig(1, R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
             R"({"kv_connector":"NixlConnector"},{"kv_connector":"OffloadingConnector",)"
             R"("kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec",)"
             R"("store_threshold":2}}]}})");
  const std::string text = rig.Text();
  EXPECT_TRUE(Declares(text, "vllm:kv_offload_stores_skipped_total")) << text;
  EXPECT_TRUE(Declares(text, "vllm:kv_offload_tiering_block_hits_total")) << text;
  EXPECT_TRUE(Declares(text, "vllm:kv_offload_cpu_allocation_size")) << text;
}

TEST(OffloadingSpecFamilies, TieringDeclaresFifteenMoreAfterTheCpuOnesInItsOrder) {
  Rig rig(1, R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":)"
             R"({"spec_name":"TieringOffloadingSpec"}})");
  const std::string text = rig.Text();
  const char* const tiering[] = {"lookup_sync_delay_seconds histogram",
                                 "lookup_async_delay_seconds histogram",
                                 "read_bytes_total counter",
                                 "read_time_total counter",
                                 "write_bytes_total counter",
                                 "write_time_total counter",
                                 "promotion_job_failures_total counter",
                                 "cascade_job_failures_total counter",
                                 "block_queries_total counter",
                                 "block_hits_total counter",
                                 "promotion_allocation_failures_total counter",
                                 "primary_write_usage_perc gauge",
                                 "primary_read_usage_perc gauge",
                                 "active_promotion_jobs gauge",
                                 "active_cascade_jobs gauge"};
  size_t previous = text.find("# TYPE vllm:kv_offload_cpu_allocation_size histogram");
  ASSERT_NE(previous, std::string::npos) << text;
  for (const char* family : tiering) {
    const size_t at = text.find(std::string("# TYPE vllm:kv_offload_tiering_") + family + "\n");
    ASSERT_NE(at, std::string::npos) << family << "\n" << text;
    EXPECT_LT(previous, at) << family;
    previous = at;
  }
  EXPECT_LT(previous, text.find("# TYPE vllm:kv_offload_load_bytes_total counter"));
}

TEST(OffloadingSpecFamilies, TieringValuesAreFedPerTierTuple) {
  Rig rig(2, R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":)"
             R"({"spec_name":"TieringOffloadingSpec"}})");
  const std::string t = "vllm:kv_offload_tiering_";
  rig.Record(Message(
      1,
      TypedPayload({
          {t + "block_queries", "counter", {{Tier("0:primary"), Int(4)}, {Tier("1:fs"), Int(2)}}},
          {t + "active_cascade_jobs", "gauge", {{Tier("1:fs"), Int(3)}}},
          {t + "lookup_sync_delay_seconds",
           "histogram",
           {{Tier("1:fs"), Array(3) + Float(0.00002) + Float(0.003) + Float(2.0)}}},
          {t + "promotion_allocation_failures", "counter", {{Array(0), Int(1)}}},
          // Two values for a one-label family: reported and skipped, the rest still records.
          {t + "block_hits", "counter", {{Array(2) + Str("1:fs") + Str("x"), Int(9)}}},
      })));
  rig.Record(
      Message(1, TypedPayload({{t + "block_queries", "counter", {{Tier("1:fs"), Int(5)}}},
                               {t + "active_cascade_jobs", "gauge", {{Tier("1:fs"), Int(1)}}}})));
  const std::string e1 = "{engine=\"1\",model_name=\"model\",tier=";
  EXPECT_EQ(rig.Value(t + "block_queries_total" + e1 + "\"0:primary\"}"), 4.0);
  EXPECT_EQ(rig.Value(t + "block_queries_total" + e1 + "\"1:fs\"}"), 7.0);
  EXPECT_EQ(rig.Value(t + "active_cascade_jobs" + e1 + "\"1:fs\"}"), 1.0) << "the last set stays";
  EXPECT_EQ(rig.Value(t + "lookup_sync_delay_seconds_count" + e1 + "\"1:fs\"}"), 3.0);
  EXPECT_EQ(rig.Value(t + "lookup_sync_delay_seconds_bucket{engine=\"1\",le=\"1e-05\","
                          "model_name=\"model\",tier=\"1:fs\"}"),
            0.0);
  EXPECT_EQ(rig.Value(t + "lookup_sync_delay_seconds_bucket{engine=\"1\",le=\"5e-05\","
                          "model_name=\"model\",tier=\"1:fs\"}"),
            1.0);
  EXPECT_EQ(rig.Value(t + "promotion_allocation_failures_total{engine=\"1\",model_name=\"model\"}"),
            1.0);
  const std::string text = rig.Text();
  EXPECT_EQ(text.find(t + "block_hits_total{"), std::string::npos) << text;
  EXPECT_EQ(text.find("engine=\"0\",model_name=\"model\",tier="), std::string::npos)
      << "engine 0 sent nothing: no child";
}

TEST(ConnectorConfig, KeepsWhatPythonIntAcceptsOfEachConfiguredConnector) {
  Result<ConnectorConfig> c = ConnectorConfig::FromKvTransferConfigJson(
      R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
      R"({"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"a":2,"b":"-7",)"
      R"("c":2.9,"d":-2.9,"e":false,"f":"2.5","g":null,"h":[1],"i":"\t12\n","j":"+4"}}]}})");
  ASSERT_TRUE(c.ok());
  const auto i = [&](std::string_view key) {
    return c->ExtraConfigInt("OffloadingConnector", key);
  };
  EXPECT_EQ(i("a"), 2);
  EXPECT_EQ(i("b"), -7);
  EXPECT_EQ(i("c"), 2) << "int() truncates toward zero";
  EXPECT_EQ(i("d"), -2);
  EXPECT_EQ(i("e"), 0);
  EXPECT_FALSE(i("f")) << "int('2.5') raises";
  EXPECT_FALSE(i("g"));
  EXPECT_FALSE(i("h"));
  EXPECT_EQ(i("i"), 12) << "int() strips surrounding whitespace";
  EXPECT_EQ(i("j"), 4);
  EXPECT_FALSE(c->ExtraConfigInt("NixlConnector", "a"));
}

}  // namespace
}  // namespace vmetrics
