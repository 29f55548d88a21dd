// SPDX-License-Identifier: Apache-2.0
// Replays every input of the KV-connector fuzzer's corpus (fuzz/corpus/kv_connector/: the seeds
// written by tools/gen_fuzz_seeds.py and every minimized crash input) through the fuzzer's own
// invariant check — decode, samples, recording under the cardinality guard, rendering — so a
// regression fails ctest without libFuzzer or clang.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "fuzz/corpus_files.h"
#include "fuzz/kv_connector_fuzz_check.h"

namespace vmetrics {
namespace {

std::string Check(const std::string& kv) {
  try {
    return fuzz::CheckKvConnectorInvariants(kv);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

TEST(KvConnectorCorpusReplay, CorpusIsSeeded) {
  EXPECT_GE(fuzz::CorpusFiles(VMETRICS_KV_CONNECTOR_CORPUS_DIR).size(), 20u)
      << "fuzz/corpus/kv_connector/ lost its seeds; rerun tools/gen_fuzz_seeds.py";
}

TEST(KvConnectorCorpusReplay, SeedsDecodeIntoPayloadsTheRecorderSees) {
  // The check is only as good as the inputs that get past decoding: most seeds must.
  size_t with_payloads = 0;
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_KV_CONNECTOR_CORPUS_DIR)) {
    const std::string frame = fuzz::WrapKvConnectorStats(fuzz::ReadCorpusFile(path));
    const std::string_view frames[] = {frame};
    EngineCoreOutputs out;
    if (DecodeEngineCoreOutputs(frames, {}, &out).ok() && out.scheduler_stats &&
        out.scheduler_stats->kv_connector_stats &&
        !out.scheduler_stats->kv_connector_stats->payloads.empty()) {
      ++with_payloads;
    }
  }
  EXPECT_GE(with_payloads, 20u);
}

TEST(KvConnectorCorpusReplay, EveryCorpusInputKeepsTheFuzzInvariants) {
  for (const std::string& path : fuzz::CorpusFiles(VMETRICS_KV_CONNECTOR_CORPUS_DIR)) {
    EXPECT_EQ(Check(fuzz::ReadCorpusFile(path)), "") << path;
  }
}

TEST(KvConnectorCorpusReplay, TheRenderingCheckRefusesAnExpositionParsersRefuse) {
  // A label value with an invalid byte, set past the recorder's guard: the invariant must see it.
  Registry registry;
  GaugeFamily family(
      &registry.AddFamily({"vllm:fuzz_check", MetricType::kGauge, "A gauge.", {"name"}}));
  EXPECT_EQ(fuzz::CheckExpositionGrammar(registry), "");
  const std::string_view value[] = {"ok"};
  family.GetOrCreate(value)->Set(1.0);
  EXPECT_EQ(fuzz::CheckExpositionGrammar(registry), "");
  const std::string_view bad[] = {"\xff"};
  family.GetOrCreate(bad)->Set(1.0);
  EXPECT_NE(fuzz::CheckExpositionGrammar(registry).find("invalid UTF-8"), std::string::npos);
}

}  // namespace
}  // namespace vmetrics
