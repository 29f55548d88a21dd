// SPDX-License-Identifier: Apache-2.0
// Tests of src/protocol/scheduler_stats.cc: every SchedulerStats key and nested stats type,
// older and newer engines' key sets, and a wrong-typed value in each key (skipped, reported,
// the rest decoded).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fixture_util.h"
#include "vmetrics/engine_core_outputs.h"
#include "vmetrics/internal/msgpack_reader.h"

namespace vmetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::vmetrics::testing::DecodeOne;
using ::vmetrics::testing::ReadFixture;
using ::vmetrics::testing::RecordingReporter;
using ::vmetrics::testing::SplitMessages;

std::vector<std::pair<std::string, int64_t>> Owned(
    const std::vector<std::pair<std::string_view, int64_t>>& pairs) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [k, v] : pairs) out.emplace_back(std::string(k), v);
  return out;
}

// SchedulerStats keys in dataclass definition order (vllm/v1/metrics/stats.py, as
// docs/wire_format.md lists them, plus the two sleep keys); message i of
// scheduler_stats_wrong_type_each_field breaks key i.
const char* const kSchedulerStatsKeys[] = {
    "num_running_reqs",
    "num_waiting_reqs",
    "num_skipped_waiting_reqs",
    "step_counter",
    "current_wave",
    "kv_cache_usage",
    "iteration_details",
    "prefix_cache_stats",
    "connector_prefix_cache_stats",
    "kv_cache_eviction_events",
    "spec_decoding_stats",
    "kv_connector_stats",
    "waiting_lora_adapters",
    "running_lora_adapters",
    "cudagraph_stats",
    "perf_stats",
    "sleep_state",
    "sleep_state_only",
};

// Raw msgpack of the scheduler_stats position (2) of an envelope, and its offset.
std::pair<std::string_view, size_t> RawSchedulerStats(std::string_view frame0) {
  protocol::MsgpackReader r(frame0);
  uint32_t n = 0;
  EXPECT_TRUE(r.ReadArrayHeader(&n).ok());
  EXPECT_GE(n, 3u);
  EXPECT_TRUE(r.Skip().ok());
  EXPECT_TRUE(r.Skip().ok());
  const size_t offset = r.offset();
  std::string_view raw;
  EXPECT_TRUE(r.ReadRaw(&raw).ok());
  return {raw, offset};
}

// Byte range [key start, value end) of `key` in the raw map at `base`.
std::pair<size_t, size_t> KeyValueRange(std::string_view raw_map, size_t base,
                                        std::string_view key) {
  protocol::MsgpackReader r(raw_map, base);
  uint32_t n = 0;
  EXPECT_TRUE(r.ReadMapHeader(&n).ok());
  for (uint32_t i = 0; i < n; ++i) {
    const size_t start = r.offset();
    std::string_view k;
    EXPECT_TRUE(r.ReadStr(&k).ok());
    EXPECT_TRUE(r.Skip().ok());
    if (k == key) return {start, r.offset()};
  }
  ADD_FAILURE() << "key " << key << " not found";
  return {0, 0};
}

void ExpectFullStats(const SchedulerStats& s) {
  EXPECT_EQ(s.num_running_reqs, 3);
  EXPECT_EQ(s.num_waiting_reqs, 2);
  EXPECT_EQ(s.num_skipped_waiting_reqs, 1);
  EXPECT_EQ(s.step_counter, 70000);
  EXPECT_EQ(s.current_wave, 4);
  EXPECT_EQ(s.kv_cache_usage, 0.375);
  ASSERT_TRUE(s.iteration_details.has_value());
  const SchedulerIterationDetails& d = *s.iteration_details;
  EXPECT_EQ(d.iteration_index, 12);
  EXPECT_EQ(d.num_ctx_requests, 1);
  EXPECT_EQ(d.num_ctx_tokens, 128);
  EXPECT_EQ(d.num_generation_requests, 2);
  EXPECT_EQ(d.num_generation_tokens, 2);
  EXPECT_EQ(d.elapsed_ms, 3.5);
  EXPECT_EQ(d.num_encoder_inputs, 1);
  EXPECT_EQ(d.num_encoder_output_tokens, 64);
  EXPECT_FALSE(d.is_dummy);
  const PrefixCacheStats& p = s.prefix_cache_stats;
  EXPECT_FALSE(p.reset);
  EXPECT_EQ(p.requests, 2);
  EXPECT_EQ(p.queries, 256);
  EXPECT_EQ(p.hits, 128);
  EXPECT_EQ(p.preempted_requests, 1);
  EXPECT_EQ(p.preempted_queries, 16);
  EXPECT_EQ(p.preempted_hits, 8);
  EXPECT_TRUE(p.hits_by_source.empty());
  ASSERT_TRUE(s.connector_prefix_cache_stats.has_value());
  const PrefixCacheStats& c = *s.connector_prefix_cache_stats;
  EXPECT_TRUE(c.reset);
  EXPECT_EQ(c.requests, 1);
  EXPECT_EQ(c.queries, 128);
  EXPECT_EQ(c.hits, 64);
  EXPECT_EQ(c.preempted_requests, 0);
  EXPECT_THAT(Owned(c.hits_by_source), ElementsAre(Pair("host", 16), Pair("p2p", 48)));
  ASSERT_EQ(s.kv_cache_eviction_events.size(), 2u);
  EXPECT_EQ(s.kv_cache_eviction_events[0].lifetime_seconds, 12.5);
  EXPECT_EQ(s.kv_cache_eviction_events[0].idle_seconds, 3.0);
  EXPECT_THAT(s.kv_cache_eviction_events[0].reuse_gaps_seconds, ElementsAre(0.5, 1.25));
  EXPECT_EQ(s.kv_cache_eviction_events[1].lifetime_seconds, 2.0);
  EXPECT_TRUE(s.kv_cache_eviction_events[1].reuse_gaps_seconds.empty());
  ASSERT_TRUE(s.spec_decoding_stats.has_value());
  const SpecDecodingStats& sd = *s.spec_decoding_stats;
  EXPECT_EQ(sd.num_spec_tokens, 3);
  EXPECT_EQ(sd.num_drafts, 2);
  EXPECT_EQ(sd.num_draft_tokens, 6);
  EXPECT_EQ(sd.num_accepted_tokens, 4);
  EXPECT_THAT(sd.num_accepted_tokens_per_pos, ElementsAre(2, 1, 1));
  EXPECT_THAT(sd.num_draft_tokens_per_pos, ElementsAre(2, 2, 2));
  ASSERT_TRUE(s.kv_connector_stats.has_value());
  ASSERT_EQ(s.kv_connector_stats->payloads.size(), 1u);
  // Nothing configured: the whole map, for the metrics library to identify (as NIXL).
  EXPECT_EQ(s.kv_connector_stats->payloads[0].named_by, PayloadNamedBy::kNothing);
  EXPECT_EQ(s.kv_connector_stats->payloads[0].payload, s.kv_connector_stats->raw);
  EXPECT_FALSE(s.kv_connector_stats->payloads[0].malformed);
  EXPECT_THAT(Owned(s.waiting_lora_adapters), ElementsAre(Pair("lora-a", 1)));
  EXPECT_THAT(Owned(s.running_lora_adapters), ElementsAre(Pair("lora-b", 2), Pair("lora-c", 1)));
  ASSERT_TRUE(s.cudagraph_stats.has_value());
  EXPECT_EQ(s.cudagraph_stats->num_unpadded_tokens, 5);
  EXPECT_EQ(s.cudagraph_stats->num_padded_tokens, 8);
  EXPECT_EQ(s.cudagraph_stats->num_paddings, 3);
  EXPECT_EQ(s.cudagraph_stats->runtime_mode, "FULL");
  ASSERT_TRUE(s.perf_stats.has_value());
  EXPECT_EQ(s.perf_stats->num_flops_per_gpu, (int64_t{1} << 40) + 7);
  EXPECT_EQ(s.perf_stats->num_read_bytes_per_gpu, int64_t{1} << 33);
  EXPECT_EQ(s.perf_stats->num_write_bytes_per_gpu, 4096);
  EXPECT_TRUE(s.perf_stats->has_debug_stats);
  ASSERT_TRUE(s.sleep_state.has_value());
  EXPECT_TRUE(s.sleep_state->scheduler_paused);
  EXPECT_EQ(s.sleep_state->weights, "offloaded");
  EXPECT_EQ(s.sleep_state->kv_cache, "released");
  EXPECT_FALSE(s.sleep_state_only);
}

// A fixture's message decoded with a context whose problems `reporter` records; `data` holds
// the bytes the decoded views point into.
struct DecodedFixture {
  std::string data;
  RecordingReporter reporter;
  EngineCoreOutputs out;
  Status status;
};

std::unique_ptr<DecodedFixture> DecodeFixture(std::string_view name) {
  auto d = std::make_unique<DecodedFixture>();
  d->data = ReadFixture(name);
  DecodeContext ctx;
  ctx.reporter = &d->reporter;
  d->status = DecodeOne(d->data, ctx, &d->out);
  return d;
}

TEST(SchedulerStats, EveryKeyDecodes) {
  const auto d = DecodeFixture("scheduler_stats_full");
  ASSERT_TRUE(d->status.ok()) << d->status.ToString();
  EXPECT_EQ(d->out.engine_index, 2);
  EXPECT_EQ(d->out.timestamp, 123.25);
  EXPECT_TRUE(d->out.outputs.empty());
  ASSERT_TRUE(d->out.scheduler_stats.has_value());
  ExpectFullStats(*d->out.scheduler_stats);
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(SchedulerStats, DecodeSchedulerStatsReadsTheMapDirectly) {
  const std::string data = ReadFixture("scheduler_stats_full");
  const auto [raw, offset] = RawSchedulerStats(data);
  SchedulerStats stats;
  Status s = DecodeSchedulerStats(raw, offset, {}, &stats);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectFullStats(stats);
  // The payload offset is reported in frame coordinates, via base_offset.
  ASSERT_TRUE(stats.kv_connector_stats.has_value());
  const ConnectorPayload& p = stats.kv_connector_stats->payloads[0];
  EXPECT_EQ(std::string_view(data).substr(p.payload_offset, p.payload.size()), p.payload);
}

TEST(SchedulerStats, OlderEngineKeysDefaultAndUnknownKeysAreIgnored) {
  const auto d = DecodeFixture("scheduler_stats_old_engine");
  ASSERT_TRUE(d->status.ok()) << d->status.ToString();
  ASSERT_TRUE(d->out.scheduler_stats.has_value());
  const SchedulerStats& s = *d->out.scheduler_stats;
  EXPECT_EQ(s.num_running_reqs, 4);
  EXPECT_EQ(s.num_waiting_reqs, 1);
  EXPECT_EQ(s.num_skipped_waiting_reqs, 0) << "missing key takes its default";
  EXPECT_EQ(s.kv_cache_usage, 0.5);
  EXPECT_FALSE(s.iteration_details.has_value());
  EXPECT_EQ(s.prefix_cache_stats.requests, 1);
  EXPECT_EQ(s.prefix_cache_stats.queries, 32);
  EXPECT_EQ(s.prefix_cache_stats.hits, 16);
  EXPECT_FALSE(s.kv_connector_stats.has_value()) << "nil kv_connector_stats is absent";
  EXPECT_FALSE(s.cudagraph_stats.has_value());
  EXPECT_FALSE(s.perf_stats.has_value());
  EXPECT_FALSE(s.sleep_state.has_value());
  EXPECT_FALSE(s.sleep_state_only);
  EXPECT_TRUE(d->reporter.problems.empty())
      << "an unknown key (encoder_cache_usage) is not a problem:\n"
      << d->reporter.Dump();
}

// A LoRA map that repeats a key reads as the dict Python makes of it: the key keeps its first
// place and takes its last value (the fixture's generator checks Python's reading), through a
// short map's linear search and a long map's index alike.
TEST(SchedulerStats, RepeatedLoraKeysReadAsPythonsDict) {
  const auto d = DecodeFixture("scheduler_stats_lora_duplicate_keys");
  ASSERT_TRUE(d->status.ok()) << d->status.ToString();
  ASSERT_TRUE(d->out.scheduler_stats.has_value());
  const SchedulerStats& s = *d->out.scheduler_stats;
  EXPECT_THAT(Owned(s.waiting_lora_adapters), ElementsAre(Pair("lora-a", 3), Pair("lora-b", 2)));
  std::vector<std::pair<std::string, int64_t>> running;  // r00 0, r01 1, ... r39 39
  for (int i = 0; i < 40; ++i) running.emplace_back((i < 10 ? "r0" : "r") + std::to_string(i), i);
  running[5].second = 100;
  running[39].second = 139;
  EXPECT_EQ(Owned(s.running_lora_adapters), running);
  EXPECT_TRUE(d->reporter.problems.empty()) << d->reporter.Dump();
}

TEST(SchedulerStats, SleepStateOnlyStatsMessage) {
  EngineCoreOutputs out;
  const std::string data = ReadFixture("stats_only_sleep");
  ASSERT_TRUE(DecodeOne(data, {}, &out).ok());
  EXPECT_TRUE(out.outputs.empty());
  ASSERT_TRUE(out.scheduler_stats.has_value());
  const SchedulerStats& s = *out.scheduler_stats;
  ASSERT_TRUE(s.sleep_state.has_value());
  EXPECT_TRUE(s.sleep_state->scheduler_paused);
  EXPECT_EQ(s.sleep_state->weights, "discarded");
  EXPECT_EQ(s.sleep_state->kv_cache, "released");
  EXPECT_TRUE(s.sleep_state_only);
  EXPECT_EQ(out.timestamp, 8.0);
}

// The valid values tools/gen_fixtures.py valid_stats_for_wrong_type_base() sends, checked for
// every key except `broken`, which must hold its default.
void ExpectBaseExcept(const SchedulerStats& s, std::string_view broken) {
  auto is = [&](std::string_view key) { return key == broken; };
  EXPECT_EQ(s.num_running_reqs, is("num_running_reqs") ? 0 : 5);
  EXPECT_EQ(s.num_waiting_reqs, is("num_waiting_reqs") ? 0 : 6);
  EXPECT_EQ(s.num_skipped_waiting_reqs, is("num_skipped_waiting_reqs") ? 0 : 7);
  EXPECT_EQ(s.step_counter, is("step_counter") ? 0 : 8);
  EXPECT_EQ(s.current_wave, is("current_wave") ? 0 : 9);
  EXPECT_EQ(s.kv_cache_usage, is("kv_cache_usage") ? 0.0 : 0.5);
  if (is("iteration_details")) {
    EXPECT_FALSE(s.iteration_details.has_value());
  } else {
    EXPECT_TRUE(s.iteration_details.has_value());
    if (s.iteration_details) {
      EXPECT_EQ(s.iteration_details->iteration_index, 1);
      EXPECT_EQ(s.iteration_details->num_generation_tokens, 5);
      EXPECT_EQ(s.iteration_details->elapsed_ms, 6.0);
    }
  }
  EXPECT_EQ(s.prefix_cache_stats.queries, is("prefix_cache_stats") ? 0 : 10);
  EXPECT_EQ(s.prefix_cache_stats.hits, is("prefix_cache_stats") ? 0 : 4);
  if (is("connector_prefix_cache_stats")) {
    EXPECT_FALSE(s.connector_prefix_cache_stats.has_value());
  } else {
    EXPECT_TRUE(s.connector_prefix_cache_stats.has_value());
    if (s.connector_prefix_cache_stats) {
      EXPECT_EQ(s.connector_prefix_cache_stats->queries, 3);
      EXPECT_EQ(s.connector_prefix_cache_stats->hits, 2);
    }
  }
  if (is("kv_cache_eviction_events")) {
    EXPECT_TRUE(s.kv_cache_eviction_events.empty());
  } else {
    EXPECT_EQ(s.kv_cache_eviction_events.size(), 1u);
    if (s.kv_cache_eviction_events.size() == 1) {
      EXPECT_EQ(s.kv_cache_eviction_events[0].lifetime_seconds, 1.0);
      EXPECT_THAT(s.kv_cache_eviction_events[0].reuse_gaps_seconds, ElementsAre(0.25));
    }
  }
  if (is("spec_decoding_stats")) {
    EXPECT_FALSE(s.spec_decoding_stats.has_value());
  } else {
    EXPECT_TRUE(s.spec_decoding_stats.has_value());
    if (s.spec_decoding_stats) {
      EXPECT_EQ(s.spec_decoding_stats->num_spec_tokens, 2);
      EXPECT_THAT(s.spec_decoding_stats->num_accepted_tokens_per_pos, ElementsAre(1, 0));
    }
  }
  // kv_connector_stats of the wrong type is not skipped: it becomes one malformed payload.
  ASSERT_TRUE(s.kv_connector_stats.has_value());
  ASSERT_EQ(s.kv_connector_stats->payloads.size(), 1u);
  const ConnectorPayload& kv = s.kv_connector_stats->payloads[0];
  EXPECT_EQ(kv.malformed, is("kv_connector_stats"));
  EXPECT_EQ(kv.named_by, PayloadNamedBy::kNothing);
  if (is("waiting_lora_adapters")) {
    EXPECT_TRUE(s.waiting_lora_adapters.empty());
  } else {
    EXPECT_THAT(Owned(s.waiting_lora_adapters), ElementsAre(Pair("a", 1)));
  }
  if (is("running_lora_adapters")) {
    EXPECT_TRUE(s.running_lora_adapters.empty());
  } else {
    EXPECT_THAT(Owned(s.running_lora_adapters), ElementsAre(Pair("b", 2)));
  }
  if (is("cudagraph_stats")) {
    EXPECT_FALSE(s.cudagraph_stats.has_value());
  } else {
    EXPECT_TRUE(s.cudagraph_stats.has_value());
    if (s.cudagraph_stats) {
      EXPECT_EQ(s.cudagraph_stats->runtime_mode, "PIECEWISE");
    }
  }
  if (is("perf_stats")) {
    EXPECT_FALSE(s.perf_stats.has_value());
  } else {
    EXPECT_TRUE(s.perf_stats.has_value());
    if (s.perf_stats) {
      EXPECT_EQ(s.perf_stats->num_flops_per_gpu, 11);
      EXPECT_EQ(s.perf_stats->num_write_bytes_per_gpu, 13);
      EXPECT_FALSE(s.perf_stats->has_debug_stats);
    }
  }
  if (is("sleep_state")) {
    EXPECT_FALSE(s.sleep_state.has_value());
  } else {
    EXPECT_TRUE(s.sleep_state.has_value());
    if (s.sleep_state) {
      EXPECT_FALSE(s.sleep_state->scheduler_paused);
      EXPECT_EQ(s.sleep_state->weights, "resident");
    }
  }
  EXPECT_EQ(s.sleep_state_only, !is("sleep_state_only"));
}

TEST(SchedulerStats, WrongTypeInEachKeySkipsOnlyThatKeyAndIsReported) {
  const std::string data = ReadFixture("scheduler_stats_wrong_type_each_field");
  const auto messages = SplitMessages(data);
  ASSERT_EQ(messages.size(), std::size(kSchedulerStatsKeys));
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string_view key = kSchedulerStatsKeys[i];
    SCOPED_TRACE(std::string("broken key: ") + std::string(key));
    RecordingReporter reporter;
    DecodeContext ctx;
    ctx.reporter = &reporter;
    ctx.message_number = 100 + i;
    EngineCoreOutputs out;
    Status s = DecodeOne(messages[i], ctx, &out);
    ASSERT_TRUE(s.ok()) << "a wrong-typed stats key must not fail the message: " << s.ToString();
    ASSERT_TRUE(out.scheduler_stats.has_value());
    EXPECT_EQ(out.timestamp, 1.0);
    ExpectBaseExcept(*out.scheduler_stats, key);
    if (key == "kv_connector_stats") continue;  // malformed payload: checked above
    const auto problems = reporter.ForKey(key);
    ASSERT_FALSE(problems.empty()) << "no problem reported for the key; got:\n" << reporter.Dump();
    EXPECT_EQ(problems[0].message_number, 100 + i);
    EXPECT_TRUE(problems[0].connector.empty());
    EXPECT_FALSE(problems[0].what.empty());
    // The offset points at the key or its value in frame 0.
    const auto [raw, base] = RawSchedulerStats(messages[i]);
    const auto [begin, end] = KeyValueRange(raw, base, key);
    EXPECT_GE(problems[0].offset, static_cast<int64_t>(begin));
    EXPECT_LT(problems[0].offset, static_cast<int64_t>(end));
  }
}

TEST(SchedulerStats, WrongTypeWithoutReporterIsStillSkipped) {
  const std::string data = ReadFixture("scheduler_stats_wrong_type_each_field");
  const auto messages = SplitMessages(data);
  ASSERT_FALSE(messages.empty());
  EngineCoreOutputs out;
  ASSERT_TRUE(DecodeOne(messages[0], {}, &out).ok());
  ASSERT_TRUE(out.scheduler_stats.has_value());
  ExpectBaseExcept(*out.scheduler_stats, "num_running_reqs");
}

TEST(SchedulerStats, NestedWrongTypeSkipsOnlyThatNestedKey) {
  const auto d = DecodeFixture("scheduler_stats_nested_wrong_type");
  ASSERT_TRUE(d->status.ok()) << d->status.ToString();
  ASSERT_TRUE(d->out.scheduler_stats.has_value());
  const SchedulerStats& s = *d->out.scheduler_stats;
  EXPECT_EQ(s.prefix_cache_stats.requests, 1);
  EXPECT_EQ(s.prefix_cache_stats.queries, 10);
  EXPECT_EQ(s.prefix_cache_stats.hits, 0) << "the str 'x' is skipped";
  EXPECT_EQ(s.num_running_reqs, 5);
  ASSERT_TRUE(s.connector_prefix_cache_stats.has_value());
  EXPECT_EQ(s.connector_prefix_cache_stats->hits, 2);
  EXPECT_FALSE(d->reporter.ForKey("hits").empty()) << d->reporter.Dump();
}

TEST(SchedulerStats, NotAMapFailsDecodeSchedulerStats) {
  SchedulerStats stats;
  EXPECT_FALSE(DecodeSchedulerStats(std::string_view("\x92\x01\x02", 3), 0, {}, &stats).ok());
  EXPECT_FALSE(DecodeSchedulerStats(std::string_view("\x81", 1), 0, {}, &stats).ok());
}

}  // namespace
}  // namespace vmetrics
