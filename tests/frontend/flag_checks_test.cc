// SPDX-License-Identifier: Apache-2.0
// The option checks Frontend::Bind and Replay share (src/frontend/flag_checks.h): values the flag
// parser would clamp, ignore or turn into "no limit" are refused, naming the flag.
#include "flag_checks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "token_request.h"
#include "vmetrics/frontend.h"
#include "vmetrics/offline/replay.h"
#include "vmetrics/wire_generation.h"

namespace vmetrics::frontend {
namespace {

TEST(ParseNumSpeculativeTokens, IntegerFromOneTo128OrAbsent) {
  EXPECT_EQ(ParseNumSpeculativeTokens("").value(), 0);
  EXPECT_EQ(ParseNumSpeculativeTokens("{}").value(), 0);
  EXPECT_EQ(ParseNumSpeculativeTokens(R"({"method":"ngram"})").value(), 0);
  EXPECT_EQ(ParseNumSpeculativeTokens(R"({"num_speculative_tokens":null})").value(), 0);
  EXPECT_EQ(ParseNumSpeculativeTokens(R"({"num_speculative_tokens":1})").value(), 1);
  EXPECT_EQ(ParseNumSpeculativeTokens(R"({"num_speculative_tokens":128})").value(), 128);
  for (const char* bad : {R"("3")", "3.0", "2.5", "true", "0", "-1", "129", "[3]",
                          "18446744073709551615", "9223372036854775808"}) {
    const std::string json = std::string(R"({"num_speculative_tokens":)") + bad + "}";
    Result<int64_t> r = ParseNumSpeculativeTokens(json);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(
                  "--speculative-config: num_speculative_tokens must be an integer from 1 to 128"),
              std::string::npos)
        << r.status().ToString();
  }
  EXPECT_FALSE(ParseNumSpeculativeTokens("3").ok());
  EXPECT_FALSE(ParseNumSpeculativeTokens("{").ok());
}

// A value nested 100,000 deep is named by its type, never written out (dump() recurses).
TEST(ParseNumSpeculativeTokens, DeeplyNestedValueIsRefusedWithoutWritingItOut) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Result<int64_t> r = ParseNumSpeculativeTokens(R"({"num_speculative_tokens":)" + deep + "}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--speculative-config: num_speculative_tokens must be an integer from 1 to 128, got "
            "a array");
}

TEST(CheckSpecDecodeMetrics, ALevelThatNeedsSpeculativeDecodingAndAnEngineThatSendsIt) {
  EXPECT_EQ(*CheckSpecDecodeMetrics("none", 0, nullptr), SpecDecodeMetricsLevel::kNone);
  EXPECT_EQ(*CheckSpecDecodeMetrics("summary", 3, nullptr), SpecDecodeMetricsLevel::kSummary);
  EXPECT_EQ(*CheckSpecDecodeMetrics("detailed", 3, &NewestWireGeneration()),
            SpecDecodeMetricsLevel::kDetailed);
  const Result<SpecDecodeMetricsLevel> bad = CheckSpecDecodeMetrics("full", 3, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--per-request-spec-decode-metrics"), std::string::npos);
  // vLLM's config refuses the flag without --speculative-config.
  const Result<SpecDecodeMetricsLevel> no_spec = CheckSpecDecodeMetrics("summary", 0, nullptr);
  ASSERT_FALSE(no_spec.ok());
  EXPECT_NE(no_spec.status().message().find("--speculative-config"), std::string::npos);
  // A pinned generation whose outputs cannot carry the map.
  const Result<SpecDecodeMetricsLevel> pinned =
      CheckSpecDecodeMetrics("summary", 3, FindWireGeneration("g20260814"));
  ASSERT_FALSE(pinned.ok());
  EXPECT_NE(pinned.status().message().find("--engine-wire g20260814"), std::string::npos);
}

TEST(CheckMaxModelLen, PositiveOrFromTheEngines) {
  EXPECT_TRUE(CheckMaxModelLen(1, false).ok());
  EXPECT_TRUE(CheckMaxModelLen(INT64_MAX, false).ok());
  EXPECT_TRUE(CheckMaxModelLen(0, true).ok());
  EXPECT_FALSE(CheckMaxModelLen(0, false).ok());
  EXPECT_FALSE(CheckMaxModelLen(-5, true).ok());
  EXPECT_EQ(CheckMaxModelLen(-5, true).message(),
            "--max-model-len must be a positive integer, got -5");
}

TEST(CheckMaxLabelValueBytes, FromOneToOneMebibyte) {
  EXPECT_TRUE(CheckMaxLabelValueBytes(1).ok());
  EXPECT_TRUE(CheckMaxLabelValueBytes(kMaxLabelValueBytesLimit).ok());
  EXPECT_FALSE(CheckMaxLabelValueBytes(0).ok());
  EXPECT_FALSE(CheckMaxLabelValueBytes(kMaxLabelValueBytesLimit + 1).ok());
  EXPECT_FALSE(CheckMaxLabelValueBytes(SIZE_MAX).ok());
}

TEST(CheckServedModelName, LikeALabelValueFromTheWire) {
  EXPECT_TRUE(CheckServedModelName("acme/dev-wire-3b", 1024).ok());
  EXPECT_TRUE(CheckServedModelName("mod\xc3\xa8le", 1024).ok());
  EXPECT_TRUE(CheckServedModelName(std::string(1024, 'm'), 1024).ok());
  EXPECT_FALSE(CheckServedModelName(std::string(1025, 'm'), 1024).ok());
  EXPECT_FALSE(CheckServedModelName(std::string(9, 'm'), 8).ok());
  EXPECT_FALSE(CheckServedModelName("", 1024).ok());
  for (const char* bad : {"m\xff", "m\xc3", "\xed\xa0\x80", "\xc0\xaf"}) {
    Status s = CheckServedModelName(bad, 1024);
    EXPECT_EQ(s.message(), "--served-model-name must be valid UTF-8") << bad;
  }
}

// LoRA names and paths go to the engines as msgpack str: UTF-8, no control characters, bounded.
TEST(CheckLoraModules, NamesAndPathsAnEngineCanDecode) {
  EXPECT_TRUE(CheckLoraModules({}, 1024).ok());
  EXPECT_TRUE(
      CheckLoraModules({{"sql", "/adapters/sql", 0}, {"chat\xc3\xa9", "/a/c", 0}}, 1024).ok());
  struct Case {
    LoraModule module;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"sql\xff", "/a", 0}, "--lora-modules: the name of adapter 2 is not valid UTF-8"},
           {{"sql", "/a\xc3", 0}, "--lora-modules: the path of adapter 2 is not valid UTF-8"},
           {{"", "/a", 0}, "--lora-modules: the name of adapter 2 is empty"},
           {{"s\nql", "/a", 0}, "--lora-modules: the name of adapter 2 holds a control character"},
           {{std::string(1025, 'n'), "/a", 0},
            "--lora-modules: the name of adapter 2 is 1025 bytes, more than 1024"},
           {{"sql", "/" + std::string(kMaxLoraPathBytes, 'p'), 0},
            "--lora-modules: the path of adapter 2 is 4097 bytes, more than 4096"},
       }) {
    const Status s = CheckLoraModules({{"ok", "/ok", 0}, c.module}, 1024);
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
}

// Replay applies the same checks before reading anything.
TEST(CheckServedModelName, ReplayRefusesWhatServeRefuses) {
  ReplayOptions o;
  o.input = "/nonexistent/capture.msgpack";
  o.served_model_name = "m\xff";
  Result<ReplayOutput> r = Replay(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--served-model-name"), std::string::npos);
  o.served_model_name = "model";
  o.max_model_len = 0;
  r = Replay(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--max-model-len"), std::string::npos);
  o.max_model_len = 8192;
  o.speculative_config = R"({"num_speculative_tokens":"3"})";
  r = Replay(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--speculative-config"), std::string::npos);
}

}  // namespace
}  // namespace vmetrics::frontend
