// SPDX-License-Identifier: Apache-2.0
// --custom-histogram-buckets, --show-hidden-metrics-for-version and VLLM_COMPUTE_NANS_IN_LOGITS
// as vLLM reads them (vllm/config/observability.py, vllm/envs.py).
#include "observability_flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "environment.h"

namespace vmetrics::frontend {
namespace {

std::string ErrorOf(std::string_view json) {
  Result<CustomHistogramBuckets> r = ParseCustomHistogramBuckets(json);
  return r.ok() ? "" : r.status().message();
}

TEST(CustomHistogramBuckets, KeysAndBoundsAreKept) {
  Result<CustomHistogramBuckets> r = ParseCustomHistogramBuckets(
      R"({"request_latency":[0.1,1,10],"request_num_preemptions":[2]})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].first, "request_latency");
  EXPECT_EQ((*r)[0].second, (std::vector<double>{0.1, 1, 10}));
  EXPECT_EQ((*r)[1].first, "request_num_preemptions");
  EXPECT_TRUE(ParseCustomHistogramBuckets("")->empty());
}

TEST(CustomHistogramBuckets, BadInputIsRefusedNamingTheFlagAsVllmWordsIt) {
  EXPECT_EQ(ErrorOf(R"({"nixl":[1]})"),
            "--custom-histogram-buckets: unknown bucket family 'nixl'; known families: "
            "['inter_token_latency', 'iteration_tokens', 'kv_cache_residency', "
            "'request_latency', 'request_num_preemptions', 'request_params_n', "
            "'request_tokens', 'time_to_first_token']");
  EXPECT_EQ(ErrorOf(R"({"request_latency":[]})"),
            "--custom-histogram-buckets['request_latency']: bucket list must not be empty");
  EXPECT_EQ(ErrorOf(R"({"request_latency":[1,0]})"),
            "--custom-histogram-buckets['request_latency']: bound 0 must be finite and greater "
            "than 0");
  EXPECT_EQ(ErrorOf(R"({"request_latency":[-1]})"),
            "--custom-histogram-buckets['request_latency']: bound -1 must be finite and greater "
            "than 0");
  EXPECT_EQ(ErrorOf(R"({"request_tokens":[1,true]})"),
            "--custom-histogram-buckets['request_tokens']: bound True must be a number, not a "
            "boolean");
  EXPECT_EQ(ErrorOf(R"({"request_tokens":[2,2]})"),
            "--custom-histogram-buckets['request_tokens']: bounds [2,2] must be strictly "
            "increasing");
  EXPECT_NE(ErrorOf(R"({"request_tokens":["1"]})").find("must be a number"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({"request_tokens":1})").find("must be a list"), std::string::npos);
  EXPECT_NE(ErrorOf("[1]").find("--custom-histogram-buckets must be a JSON object"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{").find("--custom-histogram-buckets must be a JSON object"),
            std::string::npos);
}

// A bound that is a list nested 100,000 deep is named by its type: writing it out would recurse
// once per level.
TEST(CustomHistogramBuckets, DeeplyNestedBoundIsRefusedWithoutWritingItOut) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(ErrorOf(R"({"request_latency":[1,)" + deep + "]}"),
            "--custom-histogram-buckets['request_latency']: bound array must be a number");
  EXPECT_EQ(ErrorOf(R"({"request_latency":["1"]})"),
            "--custom-histogram-buckets['request_latency']: bound \"1\" must be a number");
}

TEST(ShowHiddenMetrics, VersionsParseAsPackagingParsesThem) {
  for (const char* v : {"0.31", "0.7.0", "v1.2", " 1.0 ", "1!2.0", "0.27.2rc1.dev407+g1a2b",
                        "1.0.post1", "1.0-1", "1.0a", "2.0.0.dev0", "1.0+local.7"}) {
    EXPECT_TRUE(IsPep440Version(v)) << v;
  }
  for (const char* v : {"", "latest", "0.31.x", "1..0", "1.0+", ".1", "1.0 beta 2"}) {
    EXPECT_FALSE(IsPep440Version(v)) << v;
  }
}

TEST(ShowHiddenMetrics, ThePreviousMinorOfTheRunningVersionOrAnyForADevelopmentBuild) {
  EXPECT_FALSE(ShowHiddenMetrics(std::nullopt, "0.32.0"));
  EXPECT_FALSE(ShowHiddenMetrics(std::nullopt, ""));
  EXPECT_TRUE(ShowHiddenMetrics("0.31", "0.32.0"));
  EXPECT_TRUE(ShowHiddenMetrics("0.31", "0.32.1rc2.dev5+gabc"));
  EXPECT_FALSE(ShowHiddenMetrics("0.30", "0.32.0"));
  EXPECT_FALSE(ShowHiddenMetrics("0.31.0", "0.32.0"));  // compared as text, as vLLM does
  // No version reported, a development build, or one that does not parse: shown.
  EXPECT_TRUE(ShowHiddenMetrics("0.1", ""));
  EXPECT_TRUE(ShowHiddenMetrics("0.1", "0.0.0+dev"));
  EXPECT_TRUE(ShowHiddenMetrics("0.1", "unknown"));
}

TEST(ComputeNansInLogits, ReadAsPythonsBoolOfInt) {
  unsetenv("VLLM_COMPUTE_NANS_IN_LOGITS");
  EXPECT_FALSE(*ComputeNansInLogitsFromEnvironment());
  for (const char* on : {"1", " 2 ", "+1", "-1"}) {
    setenv("VLLM_COMPUTE_NANS_IN_LOGITS", on, 1);
    EXPECT_TRUE(*ComputeNansInLogitsFromEnvironment()) << on;
  }
  for (const char* off : {"0", "00", "-0"}) {
    setenv("VLLM_COMPUTE_NANS_IN_LOGITS", off, 1);
    EXPECT_FALSE(*ComputeNansInLogitsFromEnvironment()) << off;
  }
  for (const char* bad : {"", "true", "1.0", "yes"}) {
    setenv("VLLM_COMPUTE_NANS_IN_LOGITS", bad, 1);
    Result<bool> r = ComputeNansInLogitsFromEnvironment();
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("VLLM_COMPUTE_NANS_IN_LOGITS"), std::string::npos);
  }
  unsetenv("VLLM_COMPUTE_NANS_IN_LOGITS");
}

}  // namespace
}  // namespace vmetrics::frontend
