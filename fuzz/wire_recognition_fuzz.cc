// SPDX-License-Identifier: Apache-2.0
// wire_recognition_fuzz: libFuzzer target for recognising an engine's wire generation
// (wire_decoder.h) and decoding with the recognised table. The input is a stream of messages;
// wire_recognition_fuzz_check.h has its layout and the invariants.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/wire_recognition/ (seed-* files: every message of every capture in
// tests/fixtures/wire_generations/, alone and as whole streams, written by
// tools/gen_fuzz_seeds.py; keep minimized crash inputs there too: protocol_test replays it).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/wire_recognition_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckWireRecognitionInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "wire_recognition_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
