// SPDX-License-Identifier: Apache-2.0
// Replays every input of the recording fuzzer's corpus (fuzz/corpus/record/: the decode seeds
// and every minimized crash input) through the fuzzer's own invariant check — decode, request
// tracking, recording, both renderings through the exposition grammar checker — so a
// regression fails ctest without libFuzzer or clang.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "fuzz/corpus_files.h"
#include "fuzz/record_fuzz_check.h"

namespace vmetrics {
namespace {

TEST(RecordCorpusReplay, CorpusIsSeeded) {
  EXPECT_GE(fuzz::CorpusFiles(VMETRICS_RECORD_CORPUS_DIR).size(), 40u)
      << "fuzz/corpus/record/ lost its seeds (copies of fuzz/corpus/decode/)";
}

TEST(RecordCorpusReplay, EveryCorpusInputRendersValidExpositions) {
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_RECORD_CORPUS_DIR)) {
    std::string why;
    try {
      why = fuzz::CheckRecordInvariants(fuzz::ReadCorpusFile(path));
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    EXPECT_EQ(why, "") << path;
  }
}

}  // namespace
}  // namespace vmetrics
