// SPDX-License-Identifier: Apache-2.0
// completions_fuzz: libFuzzer target for ParseCompletionRequest and ParseGenerateRequest (the
// bodies of POST /v1/completions and POST /inference/v1/generate, which any HTTP client can
// send): every input goes through both parsers.
//
// Parses the input as a request body and checks the invariants listed in
// completions_fuzz_check.h: no crash, the same answer twice, refusals that are 400/404 with a
// message and a well-formed error body, and accepted requests within every limit.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/completions/ (hand-written seeds of both APIs; keep every minimized crash
// input there too: frontend_test replays the directory without libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/completions_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckCompletionInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "completions_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
