// SPDX-License-Identifier: Apache-2.0
// Named tests for the behaviour that motivated vmetrics (vLLM PR #52755 and its Mooncake P2P
// follow-up, PR #56939; docs/design.md §1.2): Python-shaped Mooncake P2P payloads must record,
// bare and as MultiConnector children, without disturbing NIXL and Mooncake store.
#include "vmetrics/recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/exposition_invariant.h"
#include "fuzz/kv_connector_fuzz_check.h"
#include "tests/metrics/test_util.h"

namespace vmetrics {
namespace {

using testing::RecordFixture;
using testing::Render;

RecorderOptions Options(std::string kv_transfer_config) {
  RecorderOptions o;
  o.served_model_name = "m";
  o.log = [](const std::string&) {};
  if (!kv_transfer_config.empty()) {
    o.connectors = *ConnectorConfig::FromKvTransferConfigJson(kv_transfer_config);
  }
  return o;
}

constexpr const char* kMulti =
    R"({"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[)"
    R"({"kv_connector":"NixlConnector"},{"kv_connector":"MooncakeStoreConnector"},)"
    R"({"kv_connector":"MooncakeConnector"}]}})";

void ExpectMooncakeP2pRecorded(const std::string& text) {
  EXPECT_HAS_LINE(
      text, R"(vllm:mooncake_xfer_time_seconds_bucket{engine="0",le="0.005",model_name="m"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vllm:mooncake_xfer_time_seconds_count{engine="0",model_name="m"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vllm:mooncake_xfer_time_seconds_sum{engine="0",model_name="m"} 0.004)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:mooncake_bytes_transferred_bucket{engine="0",le="2.097152e+06",model_name="m"} 1.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:mooncake_bytes_transferred_bucket{engine="0",le="524288.0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(text, R"(vllm:mooncake_num_descriptors_sum{engine="0",model_name="m"} 16.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:mooncake_num_failed_transfers_total{engine="0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(text, R"(vllm:mooncake_num_failed_recvs_total{engine="0",model_name="m"} 1.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:mooncake_num_kv_expired_reqs_total{engine="0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(
      text,
      "# HELP vllm:mooncake_num_failed_recvs_total Number of failed Mooncake KV Cache receives.");
}

TEST(KvConnectorRecording, BareMooncakeP2pPayloadRecordsIntoTheSixMooncakeFamilies) {
  Registry reg;
  StatsRecorder rec(&reg, Options(R"({"kv_connector":"MooncakeConnector"})"));
  RecordFixture(rec, "kv_mooncake_p2p.msgpack");
  const std::string text = Render(reg);
  ExpectMooncakeP2pRecorded(text);
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="MooncakeConnector",outcome="recorded"} 1.0)");
  EXPECT_LACKS(text, "vllm:nixl_");  // Python semantics: only the configured connector's families
}

TEST(KvConnectorRecording, BareMooncakeP2pPayloadIsInferredWhenNothingIsConfigured) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  RecordFixture(rec, "kv_mooncake_p2p.msgpack");
  ExpectMooncakeP2pRecorded(Render(reg));
}

TEST(KvConnectorRecording, MooncakeP2pChildOfMultiConnectorRecordsBesideNixl) {
  Registry reg;
  StatsRecorder rec(&reg, Options(kMulti));
  RecordFixture(rec, "kv_multi_mooncake_p2p.msgpack");
  const std::string text = Render(reg);
  ExpectMooncakeP2pRecorded(text);
  // NIXL unchanged by the Mooncake child: same values as a bare NIXL payload.
  EXPECT_HAS_LINE(text, R"(vllm:nixl_xfer_time_seconds_count{engine="0",model_name="m"} 2.0)");
  EXPECT_HAS_LINE(text, R"(vllm:nixl_num_kv_expired_reqs_total{engine="0",model_name="m"} 1.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="MooncakeConnector",outcome="recorded"} 1.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="NixlConnector",outcome="recorded"} 1.0)");
}

TEST(KvConnectorRecording, NixlAndStoreFamiliesAreUnchangedByMooncakeP2p) {
  // Record NIXL and store alone, then with a Mooncake P2P payload in between: the NIXL and
  // store lines must be identical.
  auto nixl_and_store_lines = [](bool with_p2p) {
    FixedClock clock(123.456);
    Registry reg(&clock);
    StatsRecorder rec(&reg, Options(""));  // bare payloads, identified by shape
    RecordFixture(rec, "kv_nixl.msgpack");
    if (with_p2p) RecordFixture(rec, "kv_mooncake_p2p.msgpack");
    RecordFixture(rec, "kv_mooncake_store.msgpack");
    std::string kept;
    std::istringstream in(Render(reg));
    for (std::string line; std::getline(in, line);) {
      if (line.find("vllm:nixl_") != std::string::npos ||
          line.find("vllm:mooncake_store_") != std::string::npos) {
        kept += line + "\n";
      }
    }
    return kept;
  };
  const std::string without = nixl_and_store_lines(false);
  EXPECT_NE(without.find("vllm:mooncake_store_operation_total{engine=\"0\",model_name=\"m\","
                         "operation=\"load_get\",status=\"ok\"} 1.0"),
            std::string::npos)
      << without;
  EXPECT_EQ(without, nixl_and_store_lines(true));
}

TEST(KvConnectorRecording, NixlPayloadWithExtraKeysIsStillRecorded) {
  // Rust's strict NixlStats (deny_unknown_fields) dropped this payload; Python ignores the keys.
  Registry reg;
  StatsRecorder rec(&reg, Options(R"({"kv_connector":"NixlConnector"})"));
  RecordFixture(rec, "kv_nixl_extra_keys.msgpack");
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vllm:nixl_xfer_time_seconds_count{engine="0",model_name="m"} 2.0)");
  EXPECT_HAS_LINE(text, R"(vllm:nixl_post_time_seconds_sum{engine="0",model_name="m"} 0.003)");
  EXPECT_HAS_LINE(text, R"(vllm:nixl_num_kv_expired_reqs_total{engine="0",model_name="m"} 1.0)");
  EXPECT_HAS_LINE(text,
                  "# HELP vllm:nixl_num_descriptors Histogram of number of descriptors per NIXL  "
                  "KV Cache transfers.");
}

TEST(KvConnectorRecording, UnsupportedMultiChildIsCountedNotDropped) {
  Registry reg;
  std::vector<std::string> logged;
  RecorderOptions o = Options(kMulti);
  o.log = [&](const std::string& line) { logged.push_back(line); };
  StatsRecorder rec(&reg, o);
  RecordFixture(rec, "kv_multi_unsupported_child.msgpack");
  RecordFixture(rec, "kv_multi_unsupported_child.msgpack");
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="UnsupportedConnector",outcome="unknown_connector"} 2.0)");
  EXPECT_HAS_LINE(text, R"(vllm:nixl_xfer_time_seconds_count{engine="0",model_name="m"} 4.0)");
  // Logged once, not once per message.
  int mentions = 0;
  for (const auto& l : logged) mentions += l.find("UnsupportedConnector") != std::string::npos;
  EXPECT_EQ(mentions, 1);
}

TEST(KvConnectorRecording, NonMapPayloadIsCountedMalformedAndTheMessageStillRecords) {
  Registry reg;
  StatsRecorder rec(&reg, Options(R"({"kv_connector":"NixlConnector"})"));
  RecordFixture(rec, "kv_not_a_map.msgpack");
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(
      text,
      R"(vmetrics_kv_connector_payloads_total{connector="NixlConnector",outcome="malformed"} 1.0)");
}

TEST(KvConnectorRecording, UnconfiguredConnectorRegistersItsFamiliesOnFirstSight) {
  Registry reg;
  std::vector<std::string> logged;
  RecorderOptions o = Options("");
  o.log = [&](const std::string& line) { logged.push_back(line); };
  StatsRecorder rec(&reg, o);
  EXPECT_LACKS(Render(reg), "vllm:nixl_");
  RecordFixture(rec, "kv_nixl.msgpack");
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vllm:nixl_xfer_time_seconds_count{engine="0",model_name="m"} 2.0)");
  // Registered after vllm:cache_config_info, before vmetrics' own families.
  EXPECT_LT(text.find("vllm:cache_config_info"), text.find("vllm:nixl_xfer_time_seconds"));
  EXPECT_LT(text.find("vllm:nixl_xfer_time_seconds"), text.find("vmetrics_decode_errors"));
  ASSERT_FALSE(logged.empty());
  EXPECT_NE(logged[0].find("not configured"), std::string::npos);
}

TEST(KvConnectorRecording, StoreRecordsFindTheChildrenOfTheirOwnOperationAndStatus) {
  // The recorder reuses the previous record's children when a record's labels are the same;
  // records whose labels differ, a status sent as an int among them (its text lives in the
  // walk's scratch only until the next record), must each find their own.
  auto record = [](int keys, std::string_view status) {
    std::string r("\x82\xa8num_keys", 10);
    r += static_cast<char>(keys);  // positive fixint
    r += "\xa6status";
    if (status.size() == 1 && status[0] >= '0' && status[0] <= '9') {
      r += static_cast<char>(status[0] - '0');  // an int status
    } else {
      r += static_cast<char>(0xa0 | status.size());
      r += status;
    }
    return r;
  };
  std::string kv("\x82\xa8load_get\x96", 11);
  kv += record(1, "ok") + record(2, "ok") + record(4, "5") + record(8, "7") + record(16, "7") +
        record(32, "ok");
  kv += "\xa8save_put\x91" + record(64, "ok");
  const std::string frame = fuzz::WrapKvConnectorStats(kv);
  std::string_view frames[] = {frame};
  Registry reg;
  StatsRecorder rec(&reg, Options(R"({"kv_connector":"MooncakeStoreConnector"})"));
  EngineCoreOutputs msg;
  ASSERT_TRUE(DecodeEngineCoreOutputs(frames, rec.decode_context(1), &msg).ok());
  rec.Record(msg);
  const std::string text = Render(reg);
  auto keys = [](std::string_view op, std::string_view status) {
    return std::string(
               R"(vllm:mooncake_store_operation_keys_total{engine="0",model_name="m",operation=")") +
           std::string(op) + R"(",status=")" + std::string(status) + "\"} ";
  };
  EXPECT_HAS_LINE(text, keys("load_get", "ok") + "35.0");
  EXPECT_HAS_LINE(text, keys("load_get", "5") + "4.0");
  EXPECT_HAS_LINE(text, keys("load_get", "7") + "24.0");
  EXPECT_HAS_LINE(text, keys("save_put", "ok") + "64.0");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:mooncake_store_operation_total{engine="0",model_name="m",operation="load_get",status="ok"} 3.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:mooncake_store_operation_total{engine="0",model_name="m",operation="load_get",status="7"} 2.0)");
}

TEST(StatsRecorder, MessageFromUnknownEngineIsCountedAndSkipped) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  EngineCoreOutputs msg;
  msg.engine_index = 7;
  msg.scheduler_stats.emplace();
  msg.scheduler_stats->num_running_reqs = 5;
  rec.Record(msg);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, "vmetrics_unknown_engine_messages_total 1.0");
  EXPECT_HAS_LINE(text, R"(vllm:num_requests_running{engine="0",model_name="m"} 0.0)");
}

TEST(StatsRecorder, SchedulerGaugesAndCountersFollowPythonRules) {
  Registry reg;
  RecorderOptions o = Options("");
  o.engine_indexes = {0, 1};
  o.num_speculative_tokens = 2;
  StatsRecorder rec(&reg, o);
  EngineCoreOutputs msg;
  msg.engine_index = 1;
  SchedulerStats& s = msg.scheduler_stats.emplace();
  s.num_running_reqs = 3;
  s.num_waiting_reqs = 2;
  s.num_skipped_waiting_reqs = 1;
  s.kv_cache_usage = 0.25;
  s.prefix_cache_stats.queries = 10;
  s.prefix_cache_stats.hits = 4;
  s.spec_decoding_stats.emplace();
  s.spec_decoding_stats->num_drafts = 2;
  s.spec_decoding_stats->num_accepted_tokens_per_pos = {2, 1, 7};  // longer than k: extra ignored
  s.perf_stats.emplace();  // all zero: Python leaves the MFU counters alone
  rec.Record(msg);
  rec.Record(msg);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vllm:num_requests_running{engine="1",model_name="m"} 3.0)");
  EXPECT_HAS_LINE(text, R"(vllm:num_requests_waiting{engine="1",model_name="m"} 3.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:num_requests_waiting_by_reason{engine="1",model_name="m",reason="deferred"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25)");
  EXPECT_HAS_LINE(text, R"(vllm:prefix_cache_queries_total{engine="1",model_name="m"} 20.0)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="1"} 2.0)");
  EXPECT_LACKS(text, "position=\"2\"");
  EXPECT_HAS_LINE(text, R"(vllm:estimated_flops_per_gpu_total{engine="1",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="awake"} 1.0)");
}

// A diffusion model (SpecDecodingProm with is_diffusion): the three diffusion counters take the
// spec-decode families' place even with a speculative config, fed from spec_decoding_stats, and
// no per-position family is registered.
TEST(StatsRecorder, DiffusionModelExportsDiffusionCountersInsteadOfSpecDecode) {
  Registry reg;
  RecorderOptions o = Options(R"({"kv_connector":"NixlConnector"})");
  o.engine_indexes = {0, 1};
  o.num_speculative_tokens = 3;
  o.diffusion_model = true;
  StatsRecorder rec(&reg, o);
  EngineCoreOutputs msg;
  msg.engine_index = 1;
  SchedulerStats& s = msg.scheduler_stats.emplace();
  s.spec_decoding_stats.emplace();
  s.spec_decoding_stats->num_drafts = 4;
  s.spec_decoding_stats->num_draft_tokens = 128;
  s.spec_decoding_stats->num_accepted_tokens = 37;
  s.spec_decoding_stats->num_accepted_tokens_per_pos = {4, 4, 3};
  rec.Record(msg);
  rec.Record(msg);
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text,
                  R"(vllm:diffusion_num_denoising_steps_total{engine="1",model_name="m"} 8.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:diffusion_num_canvas_positions_total{engine="1",model_name="m"} 256.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:diffusion_num_committed_tokens_total{engine="1",model_name="m"} 74.0)");
  EXPECT_HAS_LINE(text,
                  R"(vllm:diffusion_num_denoising_steps_total{engine="0",model_name="m"} 0.0)");
  EXPECT_HAS_LINE(text,
                  "# HELP vllm:diffusion_num_committed_tokens_total Number of committed "
                  "(finalized) tokens.");
  EXPECT_LACKS(text, "spec_decode");
  // Registered where the spec-decode families are: before the connector's families.
  EXPECT_LT(text.find("vllm:diffusion_num_committed_tokens_total"),
            text.find("vllm:nixl_xfer_time_seconds"));
  EXPECT_LT(text.find("vllm:diffusion_num_denoising_steps_total"),
            text.find("vllm:diffusion_num_canvas_positions_total"));

  // Without --diffusion-model the same configuration has the spec-decode families only.
  Registry plain_reg;
  o.diffusion_model = false;
  StatsRecorder plain(&plain_reg, o);
  plain.Record(msg);
  const std::string plain_text = Render(plain_reg);
  EXPECT_LACKS(plain_text, "diffusion");
  EXPECT_HAS_LINE(plain_text,
                  R"(vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 4.0)");
}

// vllm:cache_config_info is labelled only when the engines' CacheConfig arrives; the labelled
// family takes the place the unlabelled one had in the render order.
TEST(StatsRecorder, CacheConfigInfoKeepsItsPlaceWhenItGetsItsLabels) {
  Registry reg;
  RecorderOptions o = Options("");
  o.max_loras = 1;
  StatsRecorder rec(&reg, o);
  const auto position = [&reg](std::string_view name) {
    const std::vector<const Family*> families = reg.Families();
    for (size_t i = 0; i < families.size(); ++i) {
      if (families[i]->name() == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int before = position("vllm:cache_config_info");
  ASSERT_GE(before, 0);
  EXPECT_EQ(before, position("vllm:lora_requests_info") + 1);
  const std::string unlabelled = Render(reg);
  EXPECT_HAS_LINE(unlabelled, "# TYPE vllm:cache_config_info gauge");
  rec.SetCacheConfig({{"block_size", "16"}});
  EXPECT_EQ(position("vllm:cache_config_info"), before);
  EXPECT_EQ(reg.Families().size(), static_cast<size_t>(position("vmetrics_decode_errors")) + 3)
      << "no family added: decode errors, unknown engines and payloads follow it";
  const Family* labelled = reg.Find("vllm:cache_config_info");
  ASSERT_NE(labelled, nullptr);
  EXPECT_EQ(labelled->spec().label_names, (std::vector<std::string>{"block_size", "engine"}));
  rec.SetCacheConfig({{"block_size", "32"}});  // only the first call counts, as in Python
  EXPECT_HAS_LINE(Render(reg), R"(vllm:cache_config_info{block_size="16",engine="0"} 1.0)");
  EXPECT_LACKS(Render(reg), "block_size=\"32\"");
}

// The values come from the engines' ready responses: one that is not UTF-8 or is longer than
// --max-label-value-bytes is left out of the labels and counted as every label value from
// outside is; a key that is no label name (or is `engine`) is left out too. Without the checks
// the exposition is unparsable (the grammar checker and prometheus_client refuse it).
TEST(StatsRecorder, CacheConfigInfoChecksItsLabelsAsEveryValueFromOutside) {
  Registry reg;
  RecorderOptions o = Options("");
  o.max_label_value_bytes = 8;
  StatsRecorder rec(&reg, o);
  rec.SetCacheConfig({{"block_size", "16"},
                      {"cache_dtype", "auto\xff"},
                      {"prefix", "a-very-long-value"},
                      {"bad-key", "1"},
                      {"engine", "7"},
                      {"__name__", "x"},
                      {"num_gpu_blocks", "9"}});
  const Family* labelled = reg.Find("vllm:cache_config_info");
  ASSERT_NE(labelled, nullptr);
  EXPECT_EQ(labelled->spec().label_names,
            (std::vector<std::string>{"block_size", "num_gpu_blocks", "engine"}));
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text,
                  R"(vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="9"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="invalid_utf8"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_wire_values_skipped_total{reason="label_value_too_long"} 1.0)");
  EXPECT_EQ(fuzz::CheckExpositionGrammar(reg), "");
}

// SetCacheConfig (from the thread that completes the handshake) while /metrics renders: the
// labelled family is built whole before the registry publishes it, so a render sees the
// unlabelled family or the labelled one, never a family whose labels are changing. Run under
// TSan by `make tsan` (label concurrency), where relabelling the registered family in place (a
// const_cast of its label names) is reported as a data race with the render's reading of them.
TEST(RecorderThreads, SetCacheConfigWhileRenderingIsNoRace) {
  // A CacheConfig as vLLM sends it: a label per key.
  std::vector<std::pair<std::string, std::string>> config = {
      {"block_size", "16"}, {"cache_dtype", "auto"}, {"num_gpu_blocks", "9"}};
  for (const char* key : {"gpu_memory_utilization", "swap_space", "is_attention_free",
                          "num_gpu_blocks_override", "sliding_window", "enable_prefix_caching",
                          "prefix_caching_hash_algo", "cpu_offload_gb", "calculate_kv_scales",
                          "kv_sharing_fast_prefill", "mamba_page_size_padded", "num_cpu_blocks"}) {
    config.emplace_back(key, "None");
  }
  for (int round = 0; round < 100; ++round) {
    Registry reg;
    RecorderOptions o = Options("");
    o.engine_indexes = {0, 1};
    StatsRecorder rec(&reg, o);
    std::atomic<int> renders{0};
    std::atomic<bool> done{false};
    std::string last;
    std::thread renderer([&] {
      std::string text;
      while (!done.load()) {
        text.clear();
        WriteText(reg, ExpositionOptions{}, &text);
        last = text;
        renders.fetch_add(1);
      }
    });
    while (renders.load() == 0) std::this_thread::yield();  // a render is under way
    // Each round sets the config at another point of the renders that are under way (a render
    // reads a family's label names only when it reaches that family).
    std::atomic<int> spin{0};
    while (spin.fetch_add(1, std::memory_order_relaxed) < round * 3000) {
    }
    rec.SetCacheConfig(config);
    const int after = renders.load();
    while (renders.load() < after + 2) std::this_thread::yield();  // one began after the set
    done.store(true);
    renderer.join();
    EXPECT_NE(last.find(R"(vllm:cache_config_info{block_size="16",cache_dtype="auto",)"),
              std::string::npos)
        << last;
    EXPECT_NE(last.find(R"(,engine="1",)"), std::string::npos);
  }
}

TEST(StatsRecorder, CacheConfigInfoGetsOneChildPerEngineWithSortedLabels) {
  Registry reg;
  RecorderOptions o = Options("");
  o.engine_indexes = {0, 1};
  StatsRecorder rec(&reg, o);
  rec.SetCacheConfig({{"block_size", "16"}, {"_block_size_resolved", "True"}});
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(
      text,
      R"(vllm:cache_config_info{_block_size_resolved="True",block_size="16",engine="1"} 1.0)");
}

// A clock the test moves by hand.
class ManualClock : public Clock {
 public:
  double UnixSeconds() const override { return now; }
  double now = 1000.5;
};

EngineCoreOutputs LoraMessage(int64_t engine,
                              std::vector<std::pair<std::string_view, int64_t>> waiting,
                              std::vector<std::pair<std::string_view, int64_t>> running) {
  EngineCoreOutputs msg;
  msg.engine_index = engine;
  SchedulerStats& s = msg.scheduler_stats.emplace();
  s.waiting_lora_adapters = std::move(waiting);
  s.running_lora_adapters = std::move(running);
  return msg;
}

TEST(StatsRecorder, LoraRequestsInfoIsNotRegisteredWithoutLora) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  rec.Record(LoraMessage(0, {{"sql", 1}}, {{"sql", 0}}));
  EXPECT_LACKS(Render(reg), "lora");
}

// docs/recording.md, scheduler_stats item 8: labels max_lora, waiting and running adapter names
// (comma-joined in dict order), no model_name or engine; the child is set to the current time, and
// a new combination of names is a new child (old ones stay).
TEST(StatsRecorder, LoraRequestsInfoNamesTheAdaptersAndHoldsTheTimeOfTheLastRecord) {
  ManualClock clock;
  Registry reg(&clock);
  RecorderOptions o = Options("");
  o.engine_indexes = {0, 1};
  o.kv_cache_metrics = true;
  o.max_loras = 4;
  StatsRecorder rec(&reg, o);
  std::string text = Render(reg);
  // Registered after the residency histograms, before cache_config_info; no child yet.
  const size_t lora = text.find(
      "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
      "# TYPE vllm:lora_requests_info gauge\n# HELP vllm:cache_config_info");
  ASSERT_NE(lora, std::string::npos) << text;
  EXPECT_LT(text.find("vllm:kv_block_reuse_gap_seconds"), lora);

  rec.Record(LoraMessage(0, {}, {}));
  clock.now = 1001.25;
  rec.Record(LoraMessage(1, {{"sql", 2}, {"chat", 0}}, {{"sql", 0}, {"chat", 1}}));
  clock.now = 1002.0;
  rec.Record(LoraMessage(0, {{"sql", 1}, {"chat", 0}}, {{"sql", 1}, {"chat", 1}}));
  text = Render(reg);
  EXPECT_HAS_LINE(
      text,
      R"(vllm:lora_requests_info{max_lora="4",running_lora_adapters="",waiting_lora_adapters=""} 1000.5)");
  EXPECT_HAS_LINE(
      text,
      R"(vllm:lora_requests_info{max_lora="4",running_lora_adapters="sql,chat",waiting_lora_adapters="sql,chat"} 1002.0)");
  EXPECT_LACKS(text, "model_name=\"m\",running_lora");
  // A message from an engine that is not configured records nothing, LoRA included.
  rec.Record(LoraMessage(9, {{"other", 1}}, {}));
  EXPECT_LACKS(Render(reg), "=\"other\"");
}

// Adapter names reach the labels from requests and engines: the cardinality guard bounds them.
TEST(StatsRecorder, LoraRequestsInfoChildrenAreBoundedByTheGuard) {
  Registry reg;
  RecorderOptions o = Options("");
  o.max_loras = 1;
  o.max_label_values_per_family = 2;
  StatsRecorder rec(&reg, o);
  rec.Record(LoraMessage(0, {{"a", 1}}, {{"a", 0}}));
  rec.Record(LoraMessage(0, {{"b", 1}}, {{"b", 0}}));
  rec.Record(LoraMessage(0, {{"c", 1}}, {{"c", 0}}));
  rec.Record(LoraMessage(0, {{"a", 0}}, {{"a", 1}}));  // an existing child still records
  const std::string text = Render(reg);
  EXPECT_LACKS(text, "waiting_lora_adapters=\"c\"");
  EXPECT_HAS_LINE(text,
                  R"(vmetrics_label_values_dropped_total{family="vllm:lora_requests_info"} 1.0)");
}

}  // namespace
}  // namespace vmetrics

namespace vmetrics {
namespace {

// vmetrics_engine_wire_info{engine,generation,requests}: 1 for each engine's current pair; one
// it was taken for before stays at 0. Only when the caller reports wire generations (serve).
TEST(EngineWireInfo, OneForTheCurrentGenerationZeroForAnEarlierOne) {
  Registry reg;
  RecorderOptions o = Options("");
  o.engine_indexes = {0, 1};
  o.report_engine_wire = true;
  StatsRecorder rec(&reg, o);
  EXPECT_LACKS(Render(reg), "vmetrics_engine_wire_info{");
  rec.SetEngineWire(0, "g20260712-370b678a", "g20260712-370b678a");
  rec.SetEngineWire(1, "unknown", "refused");
  rec.SetEngineWire(0, "g20260712-370b678a", "g20260712-370b678a");  // the same: no change
  std::string text = Render(reg);
  EXPECT_HAS_LINE(text, "# TYPE vmetrics_engine_wire_info gauge");
  const std::string g0712 =
      R"(vmetrics_engine_wire_info{engine="0",generation="g20260712-370b678a",)"
      R"(requests="g20260712-370b678a"})";
  EXPECT_HAS_LINE(text, g0712 + " 1.0");
  EXPECT_HAS_LINE(
      text, R"(vmetrics_engine_wire_info{engine="1",generation="unknown",requests="refused"} 1.0)");
  rec.SetEngineWire(0, "g20260814-6adad087", "g20260814-6adad087");
  text = Render(reg);
  EXPECT_HAS_LINE(text, g0712 + " 0.0");
  EXPECT_HAS_LINE(text, R"(vmetrics_engine_wire_info{engine="0",generation="g20260814-6adad087",)"
                        R"(requests="g20260814-6adad087"} 1.0)");
}

TEST(EngineWireInfo, AbsentUnlessReported) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  rec.SetEngineWire(0, "g20260712-370b678a", "g20260712-370b678a");
  EXPECT_LACKS(Render(reg), "vmetrics_engine_wire_info");
}

// Parts of a message that decoding skipped are counted by part; the rest is recorded.
TEST(DecodeErrors, SkippedPartsAreCountedByPartAndTheRestRecorded) {
  Registry reg;
  StatsRecorder rec(&reg, Options(""));
  EngineCoreOutputs m;
  m.scheduler_stats.emplace();
  m.scheduler_stats->num_running_reqs = 4;
  m.skipped.outputs = 2;
  m.skipped.finished_requests = 1;
  rec.Record(m);
  rec.CountDecodeError();
  const std::string text = Render(reg);
  EXPECT_HAS_LINE(text, R"(vmetrics_decode_errors_total{part="message"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_decode_errors_total{part="output"} 2.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_decode_errors_total{part="scheduler_stats"} 0.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_decode_errors_total{part="utility_output"} 0.0)");
  EXPECT_HAS_LINE(text, R"(vmetrics_decode_errors_total{part="finished_requests"} 1.0)");
  EXPECT_HAS_LINE(text, R"(vllm:num_requests_running{engine="0",model_name="m"} 4.0)");
}

}  // namespace
}  // namespace vmetrics
