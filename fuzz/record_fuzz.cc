// SPDX-License-Identifier: Apache-2.0
// record_fuzz: libFuzzer target for the recording path — decode, request tracking,
// StatsRecorder, rendering — with the exposition grammar as the invariant (record_fuzz_check.h):
// whatever one EngineCoreOutputs message holds, /metrics stays parsable in both formats.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/record/ (the decode seeds of tools/gen_fixtures.py, copied; keep every
// minimized crash input there too: metrics_test replays the directory without libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/record_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckRecordInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "record_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
