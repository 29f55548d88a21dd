// SPDX-License-Identifier: Apache-2.0
// Replays every input of the completions fuzzer's corpus (fuzz/corpus/completions/: the
// hand-written seeds and every minimized crash input) through the fuzzer's own invariant check,
// so a regression fails ctest without libFuzzer or clang.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "fuzz/completions_fuzz_check.h"
#include "fuzz/corpus_files.h"

namespace vmetrics {
namespace {

std::string Check(const std::string& body) {
  try {
    return fuzz::CheckCompletionInvariants(body);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

TEST(CompletionsCorpusReplay, CorpusHoldsAcceptedAndRefusedBodies) {
  size_t accepted = 0, refused = 0;
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_COMPLETIONS_CORPUS_DIR)) {
    const auto parsed =
        frontend::ParseCompletionRequest(fuzz::ReadCorpusFile(path), fuzz::FuzzCompletionLimits());
    (parsed.ok() ? accepted : refused) += 1;
  }
  EXPECT_GE(accepted, 2u) << "fuzz/corpus/completions/ lost its seeds";
  EXPECT_GE(refused, 10u);
}

TEST(CompletionsCorpusReplay, EveryCorpusInputKeepsTheFuzzInvariants) {
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_COMPLETIONS_CORPUS_DIR)) {
    EXPECT_EQ(Check(fuzz::ReadCorpusFile(path)), "") << path;
  }
}

}  // namespace
}  // namespace vmetrics
