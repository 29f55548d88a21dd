// SPDX-License-Identifier: Apache-2.0
// The label-cardinality guard (src/metrics/cardinality_guard.h): label values that engines
// send stop creating children past --max-label-values-per-family; the samples are counted per
// family in vmetrics_label_values_dropped_total and dropped, logged once per family, and
// existing children keep recording.
#include "cardinality_guard.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fuzz/kv_connector_fuzz_check.h"
#include "tests/metrics/test_util.h"
#include "vmetrics/internal/wire_text.h"
#include "vmetrics/recorder.h"

namespace vmetrics {
namespace {

using testing::Render;

// Appends a msgpack str (fixstr, str8 or str16).
void Str(std::string* out, std::string_view s) {
  if (s.size() < 32) {
    out->push_back(static_cast<char>(0xa0 | s.size()));
  } else if (s.size() < 256) {
    out->push_back(static_cast<char>(0xd9));
    out->push_back(static_cast<char>(s.size()));
  } else {
    out->push_back(static_cast<char>(0xda));
    out->push_back(static_cast<char>(s.size() >> 8));
    out->push_back(static_cast<char>(s.size() & 0xff));
  }
  out->append(s);
}

// A bare Mooncake store payload: one record {num_keys: 1, status: "ok"} per operation.
std::string StorePayload(const std::vector<std::string>& operations) {
  std::string kv(1, static_cast<char>(0x80 | operations.size()));
  for (const std::string& op : operations) {
    Str(&kv, op);
    kv += "\x91\x82";
    Str(&kv, "num_keys");
    kv += '\x01';
    Str(&kv, "status");
    Str(&kv, "ok");
  }
  return kv;
}

// A MultiConnector payload whose children are empty maps under these class names.
std::string MultiPayload(const std::vector<std::string>& class_names) {
  std::string kv(1, static_cast<char>(0x80 | class_names.size()));
  for (const std::string& name : class_names) {
    Str(&kv, name);
    kv += '\x80';
  }
  return kv;
}

struct Harness {
  explicit Harness(const std::string& kv_transfer_config, size_t limit,
                   size_t max_value_bytes = 1024) {
    RecorderOptions o;
    o.served_model_name = "m";
    o.connectors = *ConnectorConfig::FromKvTransferConfigJson(kv_transfer_config);
    o.max_label_values_per_family = limit;
    o.max_label_value_bytes = max_value_bytes;
    o.log = [this](const std::string& line) { log.push_back(line); };
    recorder = std::make_unique<StatsRecorder>(&registry, o);
  }
  void Send(const std::string& kv) {
    const std::string frame = fuzz::WrapKvConnectorStats(kv);
    std::string_view frames[] = {frame};
    EngineCoreOutputs msg;
    const Status s = DecodeEngineCoreOutputs(frames, recorder->decode_context(1), &msg);
    ASSERT_TRUE(s.ok()) << s.ToString();
    recorder->Record(msg);
  }
  size_t LogLinesMentioning(const std::string& what) const {
    size_t n = 0;
    for (const std::string& line : log) n += line.find(what) != std::string::npos;
    return n;
  }

  Registry registry;
  std::vector<std::string> log;
  std::unique_ptr<StatsRecorder> recorder;
};

constexpr const char* kStore = R"({"kv_connector":"MooncakeStoreConnector"})";
constexpr const char* kKeys = "vllm:mooncake_store_operation_keys_total";

std::string KeysLine(const std::string& op, const std::string& value) {
  return std::string(kKeys) + R"({engine="0",model_name="m",operation=")" + op +
         R"(",status="ok"} )" + value;
}

TEST(CardinalityGuard, NewStoreOperationsPastTheLimitAreCountedAndDropped) {
  Harness h(kStore, 3);
  h.Send(StorePayload({"op0", "op1", "op2", "op3", "op4"}));
  const std::string text = Render(h.registry);
  EXPECT_HAS_LINE(text, KeysLine("op0", "1.0"));
  EXPECT_HAS_LINE(text, KeysLine("op2", "1.0"));
  EXPECT_LACKS(text, "op3");
  EXPECT_LACKS(text, "op4");
  // Each dropped record counts the samples it carried: one operation and its num_keys (these
  // records have no duration, bytes or failed keys).
  EXPECT_HAS_LINE(text, "# TYPE vmetrics_label_values_dropped_total counter");
  EXPECT_HAS_LINE(
      text, R"(vmetrics_label_values_dropped_total{family="vllm:mooncake_store_operation"} 2.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_label_values_dropped_total{family="vllm:mooncake_store_operation_keys"} 2.0)");
  EXPECT_LACKS(text, R"(family="vllm:mooncake_store_operation_time_seconds")");
  EXPECT_EQ(h.LogLinesMentioning("reached 3 children"), 2u);  // once per family
  // Both dropped samples of each of the two records, by reason.
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="label_values_limit"} 4.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="invalid_utf8"} 0.0)");
  // The payload itself was still recorded (the accounting child existed already).
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="MooncakeStoreConnector",outcome="recorded"} 1.0)");
}

TEST(CardinalityGuard, ExistingChildrenKeepRecordingAndTheLogIsNotRepeated) {
  Harness h(kStore, 2);
  h.Send(StorePayload({"op0", "op1", "op2"}));
  h.Send(StorePayload({"op0", "op1", "op2", "op3"}));
  const std::string text = Render(h.registry);
  EXPECT_HAS_LINE(text, KeysLine("op0", "2.0"));
  EXPECT_HAS_LINE(text, KeysLine("op1", "2.0"));
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_label_values_dropped_total{family="vllm:mooncake_store_operation_keys"} 3.0)");
  EXPECT_EQ(h.LogLinesMentioning("vllm:mooncake_store_operation_keys reached"), 1u);
}

TEST(CardinalityGuard, WithoutDropsTheRenderingHasNoDroppedFamily) {
  Harness h(kStore, 1000);
  h.Send(StorePayload({"op0", "op1", "op2", "op3", "op4"}));
  const std::string text = Render(h.registry);
  EXPECT_HAS_LINE(text, KeysLine("op4", "1.0"));
  EXPECT_LACKS(text, "vmetrics_label_values_dropped");
  EXPECT_EQ(h.LogLinesMentioning("reached"), 0u);
}

TEST(CardinalityGuard, ZeroMeansNoLimit) {
  Harness h(kStore, 0);
  std::vector<std::string> ops;
  for (int i = 0; i < 15; ++i) ops.push_back("op" + std::to_string(i));
  h.Send(StorePayload(ops));
  const std::string text = Render(h.registry);
  EXPECT_HAS_LINE(text, KeysLine("op14", "1.0"));
  EXPECT_LACKS(text, "vmetrics_label_values_dropped");
}

TEST(CardinalityGuard, NewConnectorClassNamesInTheAccountingFamilyAreBounded) {
  // Unknown MultiConnector children each name a new `connector` label value of
  // vmetrics_kv_connector_payloads_total.
  Harness h(R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
            R"({"kv_connector":"NixlConnector"}]}})",
            2);
  h.Send(MultiPayload({"AConnector", "BConnector", "CConnector", "DConnector"}));
  h.Send(MultiPayload({"AConnector"}));
  const std::string text = Render(h.registry);
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="AConnector",outcome="unknown_connector"} 2.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="BConnector",outcome="unknown_connector"} 1.0)");
  EXPECT_LACKS(text, "CConnector");
  EXPECT_HAS_LINE(
      text, R"(vmetrics_label_values_dropped_total{family="vmetrics_kv_connector_payloads"} 2.0)");
}

TEST(CardinalityGuard, DroppedCountersAreKeptPerFamilyAndLoggedOnce) {
  Registry reg;
  std::vector<std::string> log;
  internal::CardinalityGuard guard(&reg, 1, 0, [&](const std::string& l) { log.push_back(l); });
  Family& a = reg.AddFamily({"a", MetricType::kCounter, "A.", {"x"}});
  Family& b = reg.AddFamily({"b", MetricType::kGauge, "B.", {"x"}});
  using Values = std::vector<std::string_view>;
  ASSERT_NE(guard.GetOrCreate(a, Values{"1"}), nullptr);
  EXPECT_EQ(guard.GetOrCreate(a, Values{"2"}), nullptr);
  guard.CountDropped(a);
  guard.CountDropped(a);
  guard.CountDropped(b);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vmetrics_label_values_dropped_total{family="a"} 2.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_label_values_dropped_total{family="b"} 1.0)");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("family a reached 1 children"), std::string::npos) << log[0];
}

// Every byte of `text` is valid UTF-8 and every line is a comment or a sample: what promtool
// needs to parse it (tests/cli/hostile_captures.sh runs promtool itself).
void ExpectParsableText(const std::string& text) {
  EXPECT_TRUE(internal::IsValidUtf8(text));
  EXPECT_LT(text.size(), 64u * 1024) << "exposition grew with the wire";
}

TEST(CardinalityGuard, StoreOperationsThatAreNotUtf8AreRefusedCountedAndLoggedEscaped) {
  Harness h(kStore, 1000);
  h.Send(StorePayload({"op0", "op\xfe", "\xff\x1b[2J\nforged line"}));
  h.Send(StorePayload({"op\xfe"}));
  const std::string text = Render(h.registry);
  ExpectParsableText(text);
  EXPECT_HAS_LINE(text, KeysLine("op0", "1.0"));
  // Three records refused, each two samples (operation and num_keys).
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="invalid_utf8"} 6.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="label_values_limit"} 0.0)");
  EXPECT_LACKS(text, "vmetrics_label_values_dropped");
  // Logged once per family of the store row (five: a record creates their children together),
  // the bytes escaped; no line carries a raw control or invalid byte.
  EXPECT_EQ(h.LogLinesMentioning("not valid UTF-8"), 5u);
  EXPECT_EQ(h.LogLinesMentioning("op\\xfe"), 5u);
  for (const std::string& line : h.log) {
    EXPECT_TRUE(internal::IsValidUtf8(line)) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

TEST(CardinalityGuard, ConnectorClassNamesThatAreNotUtf8NeverBecomeLabels) {
  Harness h(R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
            R"({"kv_connector":"NixlConnector"}]}})",
            1000);
  h.Send(MultiPayload({"AConnector",
                       "Bad\xc0\xaf"
                       "Connector"}));
  const std::string text = Render(h.registry);
  ExpectParsableText(text);
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="AConnector",outcome="unknown_connector"} 1.0)");
  EXPECT_LACKS(text, "BadConnector");
  // The payload is refused by identification, with its own outcome.
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="unknown",outcome="invalid_utf8"} 1.0)");
}

TEST(CardinalityGuard, LabelValuesPastTheByteLimitAreRefused) {
  Harness h(kStore, 1000, /*max_value_bytes=*/100);
  const std::string at_limit(100, 'a');
  const std::string past_limit(101, 'b');
  const std::string huge(60000, 'c');
  h.Send(StorePayload({at_limit, past_limit, huge}));
  const std::string text = Render(h.registry);
  ExpectParsableText(text);
  EXPECT_HAS_LINE(text, KeysLine(at_limit, "1.0"));
  EXPECT_LACKS(text, past_limit);
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="label_value_too_long"} 4.0)");
  // Logged once per family, quoting only the start of the value.
  EXPECT_EQ(h.LogLinesMentioning("label value of 101 bytes refused"), 5u);  // store families
  for (const std::string& line : h.log) EXPECT_LT(line.size(), 400u);
}

TEST(CardinalityGuard, ByteLimitZeroMeansNoLimitAndDefaultIsOneKiB) {
  EXPECT_EQ(RecorderOptions{}.max_label_value_bytes, 1024u);
  Harness h(kStore, 1000, /*max_value_bytes=*/0);
  const std::string long_op(5000, 'x');
  h.Send(StorePayload({long_op}));
  EXPECT_HAS_LINE(Render(h.registry), KeysLine(long_op, "1.0"));
}

TEST(CardinalityGuard, ExistingChildrenAreFoundWithoutNewChecks) {
  Registry reg;
  internal::CardinalityGuard guard(&reg, 0, 4, nullptr);
  Family& a = reg.AddFamily({"a", MetricType::kCounter, "A.", {"x"}});
  // A child made outside the guard (eager children are) is found even past the byte limit.
  Child* eager = a.GetOrCreate({"longer than four"});
  using Values = std::vector<std::string_view>;
  internal::LabelRefusal why = internal::LabelRefusal::kLimit;
  EXPECT_EQ(guard.GetOrCreate(a, Values{"longer than four"}, &why), eager);
  EXPECT_EQ(why, internal::LabelRefusal::kNone);
  EXPECT_EQ(guard.GetOrCreate(a, Values{"five!"}, &why), nullptr);
  EXPECT_EQ(why, internal::LabelRefusal::kTooLong);
  EXPECT_EQ(guard.GetOrCreate(a, Values{"\xfe"}, &why), nullptr);
  EXPECT_EQ(why, internal::LabelRefusal::kInvalidUtf8);
  EXPECT_NE(guard.GetOrCreate(a, Values{"ok"}, &why), nullptr);
}

}  // namespace
}  // namespace vmetrics
