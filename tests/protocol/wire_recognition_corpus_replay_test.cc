// SPDX-License-Identifier: Apache-2.0
// Replays every input of the wire-recognition fuzzer's corpus (fuzz/corpus/wire_recognition/:
// the seeds tools/gen_fuzz_seeds.py cuts from tests/fixtures/wire_generations/, and every
// minimized crash input) through the fuzzer's own invariant check, so a regression fails ctest
// without libFuzzer or clang.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/corpus_files.h"
#include "fuzz/wire_recognition_fuzz_check.h"

namespace vmetrics {
namespace {

TEST(WireRecognitionCorpusReplay, EveryInputKeepsTheInvariants) {
  const auto files = fuzz::CorpusFiles(VMETRICS_WIRE_CORPUS_DIR);
  ASSERT_GE(files.size(), 27u) << "fuzz/corpus/wire_recognition/ lost its seeds; rerun "
                                  "tools/gen_fuzz_seeds.py";
  for (const std::string& file : files) {
    const std::string data = fuzz::ReadCorpusFile(file);
    EXPECT_EQ(fuzz::CheckWireRecognitionInvariants(data), "") << file;
  }
}

// Every prefix of a whole capture too: a stream cut anywhere (a truncated last message).
TEST(WireRecognitionCorpusReplay, TruncatedStreamsKeepTheInvariants) {
  const std::string data = fuzz::ReadCorpusFile(std::string(VMETRICS_WIRE_CORPUS_DIR) +
                                                "/seed-g20260112-0565f1fd_outputs");
  ASSERT_FALSE(data.empty());
  for (size_t n = 0; n <= data.size(); n += 7) {
    EXPECT_EQ(fuzz::CheckWireRecognitionInvariants(data.substr(0, n)), "") << "prefix " << n;
  }
}

}  // namespace
}  // namespace vmetrics
