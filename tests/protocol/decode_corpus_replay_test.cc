// SPDX-License-Identifier: Apache-2.0
// Replays every input of the decode fuzzer's corpus (fuzz/corpus/decode/: the seeds written by
// tools/gen_fixtures.py and every minimized crash input) through the fuzzer's own invariant
// check, so a regression fails ctest without libFuzzer or clang. The same check also runs over
// every fixture, including the multi-frame ones and those too large to be seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <typeinfo>
#include <vector>

#include "fixture_util.h"
#include "fuzz/decode_fuzz_check.h"

namespace vmetrics {
namespace {

using ::vmetrics::testing::FixtureNames;
using ::vmetrics::testing::ReadFile;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::ReadFramesFixture;

// The invariant check, with an escaping exception (std::bad_alloc from an allocation sized by
// garbage, say) reported against the input that caused it instead of ending the test.
std::string Check(std::span<const std::string_view> frames) {
  try {
    return fuzz::CheckFrameInvariants(frames);
  } catch (const std::exception& e) {
    return std::string("decode threw ") + typeid(e).name() + ": " + e.what();
  }
}

std::string Check(std::string_view fuzz_input) { return Check(fuzz::SplitFuzzInput(fuzz_input)); }

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(VMETRICS_CORPUS_DIR)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(DecodeCorpusReplay, CorpusIsSeeded) {
  const auto files = CorpusFiles();
  EXPECT_GE(files.size(), 40u) << "fuzz/corpus/decode/ lost its seeds; rerun tools/gen_fixtures.py";
}

TEST(DecodeCorpusReplay, EveryCorpusInputKeepsTheFuzzInvariants) {
  for (const std::string& path : CorpusFiles()) {
    const std::string data = ReadFile(path);
    EXPECT_EQ(Check(std::string_view(data)), "") << path;
  }
}

TEST(DecodeCorpusReplay, EveryFixtureMessageKeepsTheFuzzInvariants) {
  for (const std::string& name : FixtureNames(".msgpack")) {
    const std::string data = ReadFixture(name);
    for (std::string_view message : ::vmetrics::testing::SplitMessagesLenient(data)) {
      std::string_view frames[] = {message};
      EXPECT_EQ(Check(frames), "") << name;
    }
  }
  for (const std::string& name : FixtureNames(".frames")) {
    const auto frames = ReadFramesFixture(name);
    EXPECT_EQ(Check(frames.span()), "") << name;
  }
}

TEST(DecodeCorpusReplay, SeedWithAnAuxFrameSplitsBackIntoTheFixtureFrames) {
  const auto frames = ReadFramesFixture("pooling_aux_extended");
  ASSERT_EQ(frames.views.size(), 2u);
  const std::string seed =
      ReadFile(std::string(VMETRICS_CORPUS_DIR) + "/seed-pooling_aux_extended");
  const auto split = fuzz::SplitFuzzInput(seed);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0], frames.views[0]);
  EXPECT_EQ(split[1], frames.views[1]);
  EngineCoreOutputs out;
  ASSERT_TRUE(DecodeEngineCoreOutputs(split, {}, &out).ok());
  ASSERT_EQ(out.outputs.size(), 1u);
  ASSERT_TRUE(out.outputs[0].pooling_output.has_value());
  EXPECT_EQ(out.outputs[0].pooling_output->data.size(), 256u);
}

TEST(DecodeCorpusReplay, SummaryTellsDifferentMessagesApart) {
  // The invariant check compares summaries; a summary that ignored fields could not fail.
  EngineCoreOutputs a, b;
  const std::string full = ReadFixture("scheduler_stats_full");
  const std::string all = ReadFixture("output_all_fields");
  ASSERT_TRUE(::vmetrics::testing::DecodeOne(full, {}, &a).ok());
  ASSERT_TRUE(::vmetrics::testing::DecodeOne(all, {}, &b).ok());
  EXPECT_NE(fuzz::Summarize(a), fuzz::Summarize(b));
  EngineCoreOutputs c = a;
  c.scheduler_stats->kv_cache_eviction_events[1].reuse_gaps_seconds.push_back(0.5);
  EXPECT_NE(fuzz::Summarize(a), fuzz::Summarize(c));
  EngineCoreOutputs d = b;
  d.outputs[0].prefill_stats->num_cache_creation_tokens += 1;
  EXPECT_NE(fuzz::Summarize(b), fuzz::Summarize(d));
}

}  // namespace
}  // namespace vmetrics
