// SPDX-License-Identifier: Apache-2.0
// The families the newest upstream frontend adds (vllm/v1/metrics/loggers.py at
// vllm-project/vllm 13cbd441; docs/recording.md): their gates, their feeds, and what happens to
// values they have no child for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/metrics/test_util.h"
#include "vmetrics/iteration_stats.h"
#include "vmetrics/recorder.h"

namespace vmetrics {
namespace {

using testing::Render;

RecorderOptions Options(const std::string& kv_transfer_config) {
  RecorderOptions o;
  o.served_model_name = "m";
  o.engine_indexes = {0, 1};
  o.log = [](const std::string&) {};
  if (!kv_transfer_config.empty()) {
    o.connectors = *ConnectorConfig::FromKvTransferConfigJson(kv_transfer_config);
  }
  return o;
}

EngineCoreOutputs StatsMessage(int64_t engine) {
  EngineCoreOutputs msg;
  msg.engine_index = engine;
  msg.scheduler_stats.emplace();
  return msg;
}

TEST(KvFetchByStage, RegisteredOnlyForAKvConsumer) {
  for (const char* role : {"kv_consumer", "kv_both"}) {
    Registry reg;
    StatsRecorder rec(&reg, Options(std::string(R"({"kv_connector":"NixlConnector","kv_role":")") +
                                    role + "\"}"));
    const std::string text = Render(reg);
    EXPECT_HAS_LINE(
        text,
        R"(vllm:num_requests_kv_fetch_by_stage{engine="1",model_name="m",stage="completed_waiting"} 0.0)")
        << role;
  }
  for (const char* config :
       {R"({"kv_connector":"NixlConnector","kv_role":"kv_producer"})",
        R"({"kv_connector":"NixlConnector"})", R"({"kv_role":"kv_both"})", ""}) {
    Registry reg;
    StatsRecorder rec(&reg, Options(config));
    EXPECT_LACKS(Render(reg), "kv_fetch_by_stage") << config;
  }
}

TEST(KvFetchByStage, EveryStageIsSetEachMessageAbsentOnesToZero) {
  Registry reg;
  StatsRecorder rec(&reg, Options(R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})"));
  EngineCoreOutputs msg = StatsMessage(1);
  msg.scheduler_stats->num_kv_fetch_reqs_by_stage = {
      {"waiting_to_start", 2}, {"in_progress", 3}, {"a_stage_from_later", 9}};
  rec.Record(msg);
  msg.scheduler_stats->num_kv_fetch_reqs_by_stage = {{"completed_waiting", 4}};
  rec.Record(msg);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(
      text,
      R"(vllm:num_requests_kv_fetch_by_stage{engine="1",model_name="m",stage="waiting_to_start"} 0.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:num_requests_kv_fetch_by_stage{engine="1",model_name="m",stage="in_progress"} 0.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:num_requests_kv_fetch_by_stage{engine="1",model_name="m",stage="completed_waiting"} 4.0)");
  EXPECT_LACKS(text, "a_stage_from_later");
}

TEST(PromptTokensCachedBySource, DeviceIsTheLocalHitsAndTiersComeFromTheConnector) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  EngineCoreOutputs msg = StatsMessage(0);
  SchedulerStats& s = *msg.scheduler_stats;
  s.prefix_cache_stats.hits = 100;
  s.prefix_cache_stats.hits_by_source = {{"host", 7}};  // the local stats' split is not read
  s.connector_prefix_cache_stats.emplace();
  s.connector_prefix_cache_stats->hits = 62;
  s.connector_prefix_cache_stats->hits_by_source = {{"p2p", 22}, {"host", 40}};
  rec.Record(msg);
  const std::string text = Render(reg);
  const auto line = [](const char* source, const char* value) {
    return std::string(R"(vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="m",)") +
           "source=\"" + source + "\"} " + value;
  };
  EXPECT_HAS_LINE(text, line("device", "100.0"));
  EXPECT_HAS_LINE(text, line("host", "40.0"));
  EXPECT_HAS_LINE(text, line("p2p", "22.0"));
  EXPECT_HAS_LINE(text, line("disk", "0.0"));
  EXPECT_HAS_LINE(text, line("external_unspecified", "0.0"));
  // Eager for every engine, in CacheHitSource order (source outer, engine inner).
  EXPECT_LT(text.find(R"(engine="1",model_name="m",source="device")"),
            text.find(R"(engine="0",model_name="m",source="host")"));
}

TEST(PromptTokensCachedBySource, AnUnknownTierIsSkippedAndCountedNotInvented) {
  Registry reg;
  std::vector<std::string> logged;
  RecorderOptions o = Options("");
  o.log = [&logged](const std::string& line) { logged.push_back(line); };
  StatsRecorder rec(&reg, o);
  EngineCoreOutputs msg = StatsMessage(0);
  msg.scheduler_stats->connector_prefix_cache_stats.emplace();
  msg.scheduler_stats->connector_prefix_cache_stats->hits_by_source = {{"tape", 5}, {"disk", 3}};
  rec.Record(msg);
  const std::string text = Render(reg);
  EXPECT_LACKS(text, "tape");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="m",source="disk"} 3.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="wrong_type"} 1.0)");
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged[0].find("tape"), std::string::npos) << logged[0];
}

TEST(CorruptedRequests, RegisteredAndFedOnlyWithNanChecking) {
  IterationStats it;
  it.num_corrupted_reqs = 2;
  {
    Registry reg;
    StatsRecorder rec(&reg, Options(""));
    rec.RecordIteration(it, 1);
    EXPECT_LACKS(Render(reg), "corrupted");
  }
  Registry reg;
  RecorderOptions o = Options("");
  o.compute_nans_in_logits = true;
  StatsRecorder rec(&reg, o);
  rec.RecordIteration(it, 1);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vllm:corrupted_requests_total{engine="0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(text, R"(vllm:corrupted_requests_total{engine="1",model_name="m"} 2.0)");
  // Registered right after vllm:kv_cache_usage_perc.
  EXPECT_LT(text.find("# HELP vllm:kv_cache_usage_perc"),
            text.find("# HELP vllm:corrupted_requests_total"));
  EXPECT_LT(text.find("# HELP vllm:corrupted_requests_total"),
            text.find("# HELP vllm:prefix_cache_queries_total"));
}

TEST(RequestNumPreemptions, ObservedPerFinishedRequestWithItsBuckets) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  IterationStats it;
  it.finished_requests.resize(3);
  it.finished_requests[0].num_preemptions = 0;
  it.finished_requests[1].num_preemptions = 1;
  it.finished_requests[2].num_preemptions = 7;
  rec.RecordIteration(it, 0);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text,
                  R"(vllm:request_num_preemptions_bucket{engine="0",le="1.0",model_name="m"} 2.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:request_num_preemptions_bucket{engine="0",le="5.0",model_name="m"} 2.0)");
  EXPECT_HAS_LINE(
      text, R"(vllm:request_num_preemptions_bucket{engine="0",le="10.0",model_name="m"} 3.0)");
  EXPECT_HAS_LINE(
      text, R"(vllm:request_num_preemptions_bucket{engine="0",le="20.0",model_name="m"} 3.0)");
  EXPECT_HAS_LINE(text, R"(vllm:request_num_preemptions_sum{engine="0",model_name="m"} 8.0)");
  EXPECT_HAS_LINE(text, R"(vllm:request_num_preemptions_count{engine="1",model_name="m"} 0.0)");
  EXPECT_LT(text.find("# HELP vllm:request_decode_time_seconds"),
            text.find("# HELP vllm:request_num_preemptions"));
  EXPECT_LT(text.find("# HELP vllm:request_num_preemptions"),
            text.find("# HELP vllm:request_prefill_kv_computed_tokens"));
}

// The EC connector families (--ec-transfer-config naming ECCPUConnector): registered after the KV
// connector's families and before the MFU counters, eager per engine; a counter adds its
// number, a histogram observes each sample; what the connector does not register, or typed
// unlike its family, is counted and skipped.
TEST(EcConnectorFamilies, RegisteredAfterTheKvConnectorAndFedFromEcConnectorStats) {
  RecorderOptions o = Options(R"({"kv_connector":"NixlConnector"})");
  o.ec_connector =
      *EcConnectorConfig::FromEcTransferConfigJson(R"({"ec_connector":"ECCPUConnector"})");
  Registry reg;
  StatsRecorder rec(&reg, o);
  const std::string before = Render(reg);
  EXPECT_HAS_LINE(before, R"(vllm:ec_cpu_load_time_seconds_total{engine="1",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(
      before, R"(vllm:ec_cpu_save_size_bytes_bucket{engine="0",le="500000.0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(
      before, R"(vllm:ec_cpu_load_size_bytes_bucket{engine="1",le="2.5e+08",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(before,
                  "# HELP vllm:ec_cpu_save_bytes_total Total bytes copied from GPU to the "
                  "CPU mmap region (encoder cache save).");
  EXPECT_LT(before.find("vllm:nixl_num_kv_expired_reqs_total"),
            before.find("vllm:ec_cpu_save_bytes_total"));
  EXPECT_LT(before.find("vllm:ec_cpu_load_size_bytes_bucket"),
            before.find("vllm:estimated_flops_per_gpu_total"));
  EXPECT_LT(before.find("vllm:ec_cpu_load_time_seconds_total"),
            before.find("vllm:ec_cpu_save_size_bytes_bucket"));

  EngineCoreOutputs msg = StatsMessage(1);
  EcConnectorStats& ec = msg.scheduler_stats->ec_connector_stats.emplace();
  ec.values.push_back({"vllm:ec_cpu_load_bytes", false, 8800000, {}});
  ec.values.push_back({"vllm:ec_cpu_load_size_bytes", true, 0, {8800000, 300000000}});
  ec.values.push_back({"vllm:ec_cpu_save_bytes", true, 0, {1}});          // a counter family
  ec.values.push_back({"vllm:ec_cpu_evictions", false, 1, {}});           // not the connector's
  ec.values.push_back({"vllm:ec_cpu_save_time_seconds", false, -1, {}});  // negative
  rec.Record(msg);
  rec.Record(msg);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vllm:ec_cpu_load_bytes_total{engine="1",model_name="m"} 1.76e+07)");
  EXPECT_HAS_LINE(text, R"(vllm:ec_cpu_load_bytes_total{engine="0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(
      text, R"(vllm:ec_cpu_load_size_bytes_bucket{engine="1",le="1e+07",model_name="m"} 2.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:ec_cpu_load_size_bytes_bucket{engine="1",le="+Inf",model_name="m"} 4.0)");
  EXPECT_HAS_LINE(text, R"(vllm:ec_cpu_save_bytes_total{engine="1",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(text, R"(vllm:ec_cpu_save_time_seconds_total{engine="1",model_name="m"} 0.0)");
  EXPECT_LACKS(text, "evictions");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="wrong_type"} 4.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="negative_increment"} 2.0)");
}

// Without --ec-transfer-config, or with an EC connector vmetrics has no families for, nothing
// is registered and a payload is not recorded.
TEST(EcConnectorFamilies, NothingWithoutAConfiguredKnownEcConnector) {
  for (const char* config : {"", R"({"ec_connector":"ECExampleConnector"})"}) {
    RecorderOptions o = Options("");
    if (*config != '\0') o.ec_connector = *EcConnectorConfig::FromEcTransferConfigJson(config);
    Registry reg;
    StatsRecorder rec(&reg, o);
    EngineCoreOutputs msg = StatsMessage(0);
    msg.scheduler_stats->ec_connector_stats.emplace().values.push_back(
        {"vllm:ec_cpu_load_bytes", false, 5, {}});
    rec.Record(msg);
    const std::string text = Render(reg);
    EXPECT_LACKS(text, "ec_cpu") << config;
    EXPECT_LACKS(text, "wire_values_skipped") << config;
  }
}

}  // namespace
}  // namespace vmetrics
