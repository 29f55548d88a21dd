// SPDX-License-Identifier: Apache-2.0
// DecodeSpecDecodeMetrics and EngineCoreOutput.spec_decode_metrics: the maps Python's msgpack
// writes for RequestSpecDecodeMetrics (tests/fixtures/spec_decode_metrics.jsonl,
// tools/gen_spec_decode_goldens.py) are accepted exactly when an engine could have sent them,
// and the newest layout's capture carries them on final outputs; a malformed map is dropped
// and reported, its output kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::FixturePath;
using ::vmetrics::testing::ReadFile;
using ::vmetrics::testing::RecordingReporter;
using ::vmetrics::testing::SplitMessages;

std::string FromHex(std::string_view hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return bytes;
}

TEST(SpecDecodeMetrics, PythonsMapsDecodeExactlyWhenAnEngineCouldHaveSentThem) {
  std::ifstream in(FixturePath("spec_decode_metrics.jsonl"));
  ASSERT_TRUE(in) << "run tools/gen_spec_decode_goldens.py";
  size_t valid = 0, invalid = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json c = nlohmann::json::parse(line);
    const std::string bytes = FromHex(c["msgpack"].get<std::string>());
    RequestSpecDecodeMetrics m;
    const Status s = DecodeSpecDecodeMetrics(bytes, &m);
    EXPECT_EQ(s.ok(), c["valid"].get<bool>()) << c["name"] << ": " << s.ToString();
    EXPECT_EQ(DecodeSpecDecodeMetrics(bytes, nullptr).ok(), s.ok()) << c["name"];
    ++(s.ok() ? valid : invalid);
  }
  EXPECT_EQ(valid, 10u);
  EXPECT_EQ(invalid, 13u);
}

TEST(SpecDecodeMetrics, SumsAreTakenOverTheHistogram) {
  std::ifstream in(FixturePath("spec_decode_metrics.jsonl"));
  std::string line;
  ASSERT_TRUE(std::getline(in, line));  // the PR's example: 43 steps, 10 accepted of 129
  const nlohmann::json c = nlohmann::json::parse(line);
  ASSERT_EQ(c["name"], "pr_example_summary");
  RequestSpecDecodeMetrics m;
  ASSERT_TRUE(DecodeSpecDecodeMetrics(FromHex(c["msgpack"].get<std::string>()), &m).ok());
  EXPECT_EQ(m.num_spec_tokens, 3);
  EXPECT_THAT(m.histogram, ElementsAre(39, 1, 0, 3));
  EXPECT_EQ(m.num_draft_tokens, 129);
  EXPECT_EQ(m.num_spec_steps, 43);
  EXPECT_EQ(m.num_accepted_draft_tokens, 10);
  EXPECT_THAT(m.per_step_accepted, IsEmpty());
}

// The newest layout's capture sends the map on two final outputs (tools/gen_wire_newest.py's
// SPEC_DECODE_METRICS_PLAN), nil elsewhere.
class NewestCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = ReadFile(FixturePath("wire_generations/gnewest-20260924_outputs.msgpack"));
    messages_ = SplitMessages(data_);
    ctx_.wire = &NewestWireGeneration();
  }
  std::string data_;
  std::vector<std::string_view> messages_;
  DecodeContext ctx_;
};

TEST_F(NewestCapture, FinalOutputsCarryTheirRequestsMetrics) {
  ASSERT_GT(messages_.size(), 9u);
  EngineCoreOutputs out;
  ASSERT_TRUE(DecodeOne(messages_[9], ctx_, &out).ok());
  const EngineCoreOutput* carrier = nullptr;
  size_t with = 0;
  for (const EngineCoreOutput& o : out.outputs) {
    if (o.spec_decode_metrics.empty()) continue;
    ++with;
    carrier = &o;
  }
  ASSERT_EQ(with, 1u);
  EXPECT_EQ(carrier->request_id, "foreign-4");
  EXPECT_TRUE(carrier->finish_reason.has_value());
  RequestSpecDecodeMetrics m;
  ASSERT_TRUE(DecodeSpecDecodeMetrics(carrier->spec_decode_metrics, &m).ok());
  EXPECT_THAT(m.histogram, ElementsAre(0, 1, 1, 0));
  EXPECT_EQ(m.num_draft_tokens, 6);
  EXPECT_THAT(m.per_step_accepted, ElementsAre(1, 2));
  EXPECT_THAT(m.per_step_drafted, ElementsAre(3, 3));
  EXPECT_EQ(m.num_accepted_draft_tokens, 3);
}

TEST_F(NewestCapture, AMalformedMapIsDroppedAndReportedAndItsOutputKept) {
  ASSERT_GT(messages_.size(), 9u);
  EngineCoreOutputs intact;
  ASSERT_TRUE(DecodeOne(messages_[9], ctx_, &intact).ok());
  // The histogram [0, 1, 1, 0] with its last count made -1 (a negative fixint).
  std::string hostile(messages_[9]);
  const std::string histogram("\xa9histogram\x94\x00\x01\x01\x00", 15);
  const size_t at = hostile.find(histogram);
  ASSERT_NE(at, std::string::npos);
  hostile[at + histogram.size() - 1] = '\xff';
  RecordingReporter reporter;
  ctx_.reporter = &reporter;
  EngineCoreOutputs out;
  ASSERT_TRUE(DecodeOne(hostile, ctx_, &out).ok());
  EXPECT_EQ(out.skipped.outputs, 0u);
  ASSERT_EQ(out.outputs.size(), intact.outputs.size());
  for (size_t i = 0; i < out.outputs.size(); ++i) {
    EXPECT_EQ(out.outputs[i].request_id, intact.outputs[i].request_id);
    EXPECT_EQ(out.outputs[i].new_token_ids, intact.outputs[i].new_token_ids);
    EXPECT_TRUE(out.outputs[i].spec_decode_metrics.empty()) << out.outputs[i].request_id;
  }
  ASSERT_EQ(reporter.problems.size(), 1u);
  EXPECT_EQ(reporter.problems[0].key, "spec_decode_metrics");
  EXPECT_NE(reporter.problems[0].what.find("negative"), std::string::npos);
}

}  // namespace
}  // namespace vmetrics
