// SPDX-License-Identifier: Apache-2.0
// descriptor_fuzz: libFuzzer target for ParseMetricsDescriptor (the `_metrics_descriptor` a
// third-party KV connector sends to describe its metrics).
//
// Parses the input as a descriptor and checks the invariants listed in descriptor_fuzz_check.h:
// no crash, the same answer twice, accepted rows valid and within limits, and describing an
// accepted row and parsing the description gives the same metrics.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/descriptor/ (seed-* files come from tools/gen_fuzz_seeds.py: the
// descriptor fixtures, valid and invalid; keep every minimized crash input there too:
// protocol_test replays the directory without libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/descriptor_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckDescriptorInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "descriptor_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
