// SPDX-License-Identifier: Apache-2.0
// decode_fuzz: libFuzzer target for DecodeEngineCoreOutputs.
//
// Feeds the input as frame 0 (and, when its first byte is odd, as frame 0 plus one aux frame;
// see decode_fuzz_check.h for the layout) to the decoder under three connector configurations
// and checks that decoding never crashes, that decoding the same bytes twice gives the same
// result, and that every view of the decoded value points into the frames.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/decode/ (seed-* files come from tools/gen_fixtures.py; keep every
// minimized crash input there too: protocol_test replays the directory without libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/decode_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckDecodeInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "decode_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
