// SPDX-License-Identifier: Apache-2.0
// Replays every input of the HTTP request fuzzer's corpus (fuzz/corpus/http_request/: the
// hand-written and captured seeds, and any minimized crash input kept there) through the same
// invariant checks as fuzz/http_request_fuzz.cc, so a regression fails ctest without libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/http_request_fuzz_check.h"

namespace vmetrics {
namespace {

TEST(HttpRequestCorpus, EveryInputKeepsTheInvariants) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(VMETRICS_HTTP_CORPUS_DIR)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  EXPECT_GE(files.size(), 15u) << "fuzz/corpus/http_request/ lost its seeds";
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(fuzz::CheckHttpRequestInvariants(input), "") << file.filename();
  }
}

// The captured Prometheus scrape with the fuzz user's credentials gets through; the same
// request without them does not. Guards the seeds (and the harness) against going stale.
TEST(HttpRequestCorpus, CapturedPrometheusScrapesAreAnsweredAsExpected) {
  auto read = [](const char* name) {
    std::ifstream in(std::string(VMETRICS_HTTP_CORPUS_DIR) + "/" + name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string with_auth = read("seed-prometheus_2.42_scrape_basic_auth");
  const std::string without = read("seed-prometheus_2.42_scrape");
  ASSERT_FALSE(with_auth.empty());
  ASSERT_FALSE(without.empty());
  const HttpHandlers handlers = fuzz::FuzzHandlers();
  const internal::RequestRules rules{fuzz::kFuzzMaxHeaders, &fuzz::FuzzVerifier()};
  const internal::RequestHead head = fuzz::ParseFuzzRequest(with_auth);
  const internal::Reply reply = internal::BuildReply(handlers, rules, head);
  EXPECT_EQ(reply.status, 200u);
  EXPECT_EQ(reply.content_type, kContentTypeOpenMetrics100);
  EXPECT_EQ(reply.content_encoding, "gzip");
  EXPECT_EQ(internal::BuildReply(handlers, rules, fuzz::ParseFuzzRequest(without)).status, 401u);
}

}  // namespace
}  // namespace vmetrics
