// SPDX-License-Identifier: Apache-2.0
// Replays every input of the descriptor fuzzer's corpus (fuzz/corpus/descriptor/: the seeds
// written by tools/gen_fuzz_seeds.py and every minimized crash input) through the fuzzer's own
// invariant check, so a regression fails ctest without libFuzzer or clang.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "fuzz/corpus_files.h"
#include "fuzz/descriptor_fuzz_check.h"

namespace vmetrics {
namespace {

std::string Check(const std::string& raw) {
  try {
    return fuzz::CheckDescriptorInvariants(raw);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

TEST(DescriptorCorpusReplay, CorpusIsSeededWithValidAndInvalidDescriptors) {
  size_t valid = 0, invalid = 0;
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_DESCRIPTOR_CORPUS_DIR)) {
    (ParseMetricsDescriptor(fuzz::ReadCorpusFile(path)).ok() ? valid : invalid) += 1;
  }
  EXPECT_GE(valid, 5u) << "fuzz/corpus/descriptor/ lost its seeds; rerun tools/gen_fuzz_seeds.py";
  EXPECT_GE(invalid, 20u);
}

TEST(DescriptorCorpusReplay, EveryCorpusInputKeepsTheFuzzInvariants) {
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_DESCRIPTOR_CORPUS_DIR)) {
    EXPECT_EQ(Check(fuzz::ReadCorpusFile(path)), "") << path;
  }
}

}  // namespace
}  // namespace vmetrics
