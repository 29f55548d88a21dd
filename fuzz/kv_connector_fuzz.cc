// SPDX-License-Identifier: Apache-2.0
// kv_connector_fuzz: libFuzzer target for the KV-connector payload path, from decoding
// kv_connector_stats to rendering what was recorded.
//
// Wraps the input (a kv_connector_stats value) in a stats-only EngineCoreOutputs and, under
// four connector configurations, decodes it, walks every identified payload with
// ForEachConnectorSample, records it (descriptors adopted, cardinality guard at a small limit)
// and renders; checks the invariants listed in kv_connector_fuzz_check.h.
//
// Build and run (clang only): tools/run_fuzzers.sh [SECONDS]
// Corpus: fuzz/corpus/kv_connector/ (seed-* files come from tools/gen_fuzz_seeds.py: the
// kv_connector_stats of every kv_* fixture; keep every minimized crash input there too:
// metrics_test replays the directory without libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/kv_connector_fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = vmetrics::fuzz::CheckKvConnectorInvariants(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "kv_connector_fuzz: invariant broken: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
