// SPDX-License-Identifier: Apache-2.0
// Tests of RequestTracker (src/requests/request_tracker.cc) against
// docs/recording.md's per-output and per-finish algorithm, and of StatsRecorder::RecordIteration
// (docs/recording.md C.1-C.9).
// Every Python quirk the reference calls out has a test named after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <string>

#include "vmetrics/exposition.h"
#include "vmetrics/recorder.h"
#include "vmetrics/requests.h"

namespace vmetrics {
namespace {

EngineCoreOutput Out(std::string_view id, std::vector<int64_t> tokens) {
  EngineCoreOutput o;
  o.request_id = id;
  o.new_token_ids = std::move(tokens);
  return o;
}

EngineCoreOutputs Msg(double timestamp, std::vector<EngineCoreOutput> outputs, int64_t engine = 0) {
  EngineCoreOutputs m;
  m.engine_index = engine;
  m.timestamp = timestamp;
  m.outputs = std::move(outputs);
  return m;
}

EngineCoreOutput WithEvents(EngineCoreOutput o, std::vector<EngineCoreEvent> events) {
  o.events = std::move(events);
  return o;
}

EngineCoreOutput Finished(EngineCoreOutput o, FinishReason reason) {
  o.finish_reason = reason;
  return o;
}

PrefillStats Prefill(int64_t prompt, int64_t local, int64_t external) {
  PrefillStats p;
  p.num_prompt_tokens = prompt;
  p.num_cached_tokens = local + external;
  p.num_computed_tokens = prompt - local - external;
  p.num_local_cached_tokens = local;
  p.num_external_cached_tokens = external;
  return p;
}

RequestInfo Info(std::string id, double arrival, int64_t prompt_len,
                 std::optional<int64_t> max_tokens = 16) {
  RequestInfo info;
  info.request_id = std::move(id);
  info.arrival_time = arrival;
  info.prompt_len = prompt_len;
  info.max_tokens = max_tokens;
  return info;
}

TEST(RequestTracker, PlainRequestFollowsTheFormulas) {
  RequestTracker tracker;
  ASSERT_TRUE(tracker.AddRequest(Info("r1", 100.0, 7)));
  EngineCoreOutput first =
      WithEvents(Out("r1", {42}), {{EventType::kQueued, 1.5}, {EventType::kScheduled, 1.75}});
  first.prefill_stats = Prefill(7, 0, 0);
  auto it1 = tracker.ProcessOutputs(Msg(2.0, {first}), 100.25);
  ASSERT_TRUE(it1);
  EXPECT_EQ(it1->num_generation_tokens, 1);
  EXPECT_EQ(it1->prompt_token_stats.total, 7);
  EXPECT_EQ(it1->prompt_token_stats.computed, 7);
  ASSERT_EQ(it1->time_to_first_tokens_iter.size(), 1u);
  EXPECT_DOUBLE_EQ(it1->time_to_first_tokens_iter[0], 0.25);
  EXPECT_TRUE(it1->inter_token_latencies_iter.empty());
  auto it2 = tracker.ProcessOutputs(Msg(2.5, {Out("r1", {43})}), 100.75);
  ASSERT_EQ(it2->inter_token_latencies_iter.size(), 1u);
  EXPECT_DOUBLE_EQ(it2->inter_token_latencies_iter[0], 0.5);
  EXPECT_TRUE(it2->time_to_first_tokens_iter.empty());
  auto it3 =
      tracker.ProcessOutputs(Msg(3.5, {Finished(Out("r1", {44}), FinishReason::kLength)}), 101.5);
  ASSERT_EQ(it3->finished_requests.size(), 1u);
  const FinishedRequestStats& f = it3->finished_requests[0];
  EXPECT_EQ(f.request_id, "r1");
  EXPECT_EQ(f.finish_reason, FinishReason::kLength);
  EXPECT_DOUBLE_EQ(f.e2e_latency, 1.5);
  EXPECT_DOUBLE_EQ(f.queued_time, 0.25);
  EXPECT_DOUBLE_EQ(f.prefill_time, 0.25);
  EXPECT_DOUBLE_EQ(f.decode_time, 1.5);
  EXPECT_DOUBLE_EQ(f.inference_time, 1.75);
  EXPECT_DOUBLE_EQ(f.mean_time_per_output_token, 0.75);
  EXPECT_EQ(f.num_prompt_tokens, 7);
  EXPECT_EQ(f.num_generation_tokens, 3);
  EXPECT_EQ(f.max_tokens_param, 16);
  EXPECT_EQ(it3->max_num_generation_tokens_iter, std::vector<int64_t>{3});
  EXPECT_EQ(it3->n_params_iter, std::vector<int64_t>{1});
  EXPECT_EQ(tracker.num_live_requests(), 0u);
}

TEST(RequestTracker, QuirkTtftSampleForFirstOutputWithNoTokens) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  auto it =
      tracker.ProcessOutputs(Msg(9.0, {Finished(Out("r1", {}), FinishReason::kError)}), 100.5);
  ASSERT_EQ(it->time_to_first_tokens_iter.size(), 1u);
  EXPECT_DOUBLE_EQ(it->time_to_first_tokens_iter[0], 0.5);
  EXPECT_EQ(it->num_generation_tokens, 0);
  ASSERT_EQ(it->finished_requests.size(), 1u);
  EXPECT_EQ(it->finished_requests[0].finish_reason, FinishReason::kError);
}

TEST(RequestTracker, QuirkRawMonotonicPrefillAndInferenceTimesWithoutScheduledEvent) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  // An engine-side abort of a never-scheduled request: no events at all.
  auto it =
      tracker.ProcessOutputs(Msg(5000.25, {Finished(Out("r1", {}), FinishReason::kAbort)}), 100.5);
  const FinishedRequestStats& f = it->finished_requests[0];
  EXPECT_DOUBLE_EQ(f.queued_time, 0.0);
  EXPECT_DOUBLE_EQ(f.prefill_time, 5000.25);    // first_token_ts - 0
  EXPECT_DOUBLE_EQ(f.inference_time, 5000.25);  // last_token_ts - 0
  EXPECT_DOUBLE_EQ(f.decode_time, 0.0);
}

TEST(RequestTracker, QuirkOutputsForUnknownRequestIdsAreSkipped) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  EngineCoreOutput stranger = WithEvents(Out("nobody", {1, 2, 3}), {{EventType::kPreempted, 1.0}});
  stranger.prefill_stats = Prefill(9, 0, 0);
  auto it = tracker.ProcessOutputs(Msg(2.0, {stranger, Out("r1", {7})}), 100.5);
  ASSERT_TRUE(it);
  EXPECT_EQ(it->num_generation_tokens, 1);
  EXPECT_EQ(it->num_preempted_reqs, 0);
  EXPECT_EQ(it->prompt_token_stats.total, 0);
  EXPECT_EQ(it->time_to_first_tokens_iter.size(), 1u);
}

TEST(RequestTracker, QuirkIterationStatsEvenWhenEveryOutputIsUnknown) {
  RequestTracker tracker;
  auto it = tracker.ProcessOutputs(Msg(2.0, {Out("gone", {1})}), 100.5);
  ASSERT_TRUE(it);  // one iteration_tokens_total observation of 0 will follow
  EXPECT_EQ(it->num_generation_tokens, 0);
  EXPECT_FALSE(tracker.ProcessOutputs(Msg(2.0, {}), 100.5));  // stats-only: none
}

TEST(RequestTracker, QuirkParallelSamplingAppendsParentMaxAndNWhenLastChildFinishes) {
  RequestTracker tracker;
  for (const char* id : {"0_p", "1_p", "2_p"}) {
    RequestInfo info = Info(id, 100.0, 4);
    info.parent_id = "p";
    info.n = 3;
    tracker.AddRequest(info);
  }
  EXPECT_EQ(tracker.num_live_parents(), 1u);
  auto it1 = tracker.ProcessOutputs(Msg(2.0, {Finished(Out("0_p", {1, 2}), FinishReason::kStop),
                                              Out("1_p", {1}), Out("2_p", {1})}),
                                    100.5);
  EXPECT_EQ(it1->finished_requests.size(), 1u);
  EXPECT_TRUE(it1->max_num_generation_tokens_iter.empty());
  EXPECT_TRUE(it1->n_params_iter.empty());
  auto it2 = tracker.ProcessOutputs(
      Msg(3.0, {Finished(Out("1_p", {2, 3, 4, 5}), FinishReason::kLength)}), 101.0);
  EXPECT_TRUE(it2->n_params_iter.empty());
  auto it3 =
      tracker.ProcessOutputs(Msg(4.0, {Finished(Out("2_p", {9}), FinishReason::kStop)}), 101.5);
  EXPECT_EQ(it3->max_num_generation_tokens_iter, std::vector<int64_t>{5});
  EXPECT_EQ(it3->n_params_iter, std::vector<int64_t>{3});
  EXPECT_EQ(tracker.num_live_parents(), 0u);
  EXPECT_EQ(tracker.num_live_requests(), 0u);
}

TEST(RequestTracker, QuirkMeanTimePerOutputTokenIsZeroWithAtMostOneToken) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  auto it =
      tracker.ProcessOutputs(Msg(3.0, {Finished(Out("r1", {1}), FinishReason::kStop)}), 100.5);
  EXPECT_DOUBLE_EQ(it->finished_requests[0].mean_time_per_output_token, 0.0);
}

TEST(RequestTracker, QuirkOneItlSamplePerOutputHoweverManyTokens) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  tracker.ProcessOutputs(Msg(1.0, {Out("r1", {1})}), 100.5);
  auto it = tracker.ProcessOutputs(Msg(1.5, {Out("r1", {2, 3, 4})}), 101.0);  // spec decoding
  ASSERT_EQ(it->inter_token_latencies_iter.size(), 1u);
  EXPECT_DOUBLE_EQ(it->inter_token_latencies_iter[0], 0.5);
}

TEST(RequestTracker, OnlyTheFirstScheduledEventCountsAndPreemptionsAreCounted) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  tracker.ProcessOutputs(
      Msg(2.0,
          {WithEvents(Out("r1", {1}), {{EventType::kQueued, 1.0}, {EventType::kScheduled, 1.25}})}),
      100.5);
  auto it =
      tracker.ProcessOutputs(Msg(4.0, {WithEvents(Finished(Out("r1", {2}), FinishReason::kStop),
                                                  {{EventType::kPreempted, 2.5},
                                                   {EventType::kQueued, 2.5},
                                                   {EventType::kScheduled, 3.0}})}),
                             101.0);
  EXPECT_EQ(it->num_preempted_reqs, 1);
  const FinishedRequestStats& f = it->finished_requests[0];
  // queued_ts is the last QUEUED (2.5), scheduled_ts the first SCHEDULED (1.25): negative.
  EXPECT_DOUBLE_EQ(f.queued_time, 1.25 - 2.5);
  EXPECT_DOUBLE_EQ(f.inference_time, 4.0 - 1.25);
}

// vllm:request_num_preemptions: each finished request carries its own PREEMPTED events, counted
// over all of its outputs (not the iteration's).
TEST(RequestTracker, FinishedRequestCarriesItsOwnPreemptionCount) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  tracker.AddRequest(Info("r2", 100.0, 5));
  tracker.ProcessOutputs(Msg(1.0, {WithEvents(Out("r1", {1}), {{EventType::kPreempted, 0.5}}),
                                   WithEvents(Out("r2", {1}), {{EventType::kPreempted, 0.5}})}),
                         100.5);
  auto it = tracker.ProcessOutputs(
      Msg(2.0, {WithEvents(Finished(Out("r1", {2}), FinishReason::kStop),
                           {{EventType::kPreempted, 1.5}, {EventType::kScheduled, 1.75}}),
                Finished(Out("r2", {2}), FinishReason::kLength)}),
      101.0);
  ASSERT_EQ(it->finished_requests.size(), 2u);
  EXPECT_EQ(it->num_preempted_reqs, 1);
  EXPECT_EQ(it->finished_requests[0].num_preemptions, 2);
  EXPECT_EQ(it->finished_requests[1].num_preemptions, 1);
}

TEST(RequestTracker, CachedTokensComeFromTheFirstOutputsPrefillStats) {
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 10));
  EngineCoreOutput o = Finished(Out("r1", {1}), FinishReason::kStop);
  o.prefill_stats = Prefill(10, 3, 4);
  auto it = tracker.ProcessOutputs(Msg(2.0, {o}), 100.5);
  EXPECT_EQ(it->prompt_token_stats.computed, 3);
  EXPECT_EQ(it->prompt_token_stats.local_cache_hit, 3);
  EXPECT_EQ(it->prompt_token_stats.external_kv_transfer, 4);
  EXPECT_EQ(it->prompt_token_stats.cached_tokens, 7);
  EXPECT_EQ(it->finished_requests[0].num_cached_tokens, 7);
}

TEST(RequestTracker, ZeroMessageTimestampUsesTheFrontendsMonotonicClock) {
  RequestTracker::Options options;
  options.monotonic = [] { return 77.0; };
  RequestTracker tracker(options);
  tracker.AddRequest(Info("r1", 100.0, 5));
  tracker.ProcessOutputs(Msg(0.0, {Out("r1", {1})}), 100.5);
  EXPECT_DOUBLE_EQ(tracker.Find("r1")->first_token_ts, 77.0);
}

TEST(RequestTracker, NansInLogitsMarkCorruptedOnlyWhenTracked) {
  for (bool track : {false, true}) {
    RequestTracker::Options options;
    options.track_nans_in_logits = track;
    RequestTracker tracker(options);
    tracker.AddRequest(Info("r1", 100.0, 5));
    EngineCoreOutput o = Finished(Out("r1", {1}), FinishReason::kStop);
    o.num_nans_in_logits = 2;
    auto it = tracker.ProcessOutputs(Msg(1.0, {o}), 100.5);
    EXPECT_EQ(it->num_corrupted_reqs, track ? 1 : 0);
    EXPECT_EQ(it->finished_requests[0].is_corrupted, track);
  }
}

TEST(RequestTracker, NothingLeaksAfterFinishAndAbort) {
  RequestTracker tracker;
  EXPECT_TRUE(tracker.AddRequest(Info("a", 1.0, 1)));
  EXPECT_FALSE(tracker.AddRequest(Info("a", 1.0, 1)));  // duplicate id
  RequestInfo child = Info("0_p", 1.0, 1);
  child.parent_id = "p";
  child.n = 1;
  tracker.AddRequest(child);
  tracker.AddRequest(Info("b", 1.0, 1));
  EXPECT_TRUE(tracker.AbortRequest("a"));
  EXPECT_FALSE(tracker.AbortRequest("a"));
  EXPECT_TRUE(tracker.AbortRequest("0_p"));
  tracker.ProcessOutputs(Msg(1.0, {Finished(Out("b", {}), FinishReason::kAbort)}), 2.0);
  // A late output for an aborted request is skipped.
  auto it = tracker.ProcessOutputs(Msg(1.0, {Out("a", {1})}), 2.0);
  EXPECT_EQ(it->num_generation_tokens, 0);
  EXPECT_EQ(tracker.num_live_requests(), 0u);
  EXPECT_EQ(tracker.num_live_parents(), 0u);
}

TEST(RequestTracker, LoraStatesFollowEvents) {
  RequestTracker tracker;
  RequestInfo info = Info("r1", 1.0, 1);
  info.lora_name = "sql";
  tracker.AddRequest(info);
  tracker.ProcessOutputs(Msg(1.0, {WithEvents(Out("r1", {}), {{EventType::kQueued, 0.5}})}), 2.0);
  EXPECT_EQ(tracker.WaitingLoraAdapters(),
            (std::vector<std::pair<std::string, int64_t>>{{"sql", 1}}));
  tracker.ProcessOutputs(Msg(1.0, {WithEvents(Out("r1", {1}), {{EventType::kScheduled, 0.7}})}),
                         2.0);
  EXPECT_EQ(tracker.RunningLoraAdapters(),
            (std::vector<std::pair<std::string, int64_t>>{{"sql", 1}}));
  EXPECT_EQ(tracker.WaitingLoraAdapters(),
            (std::vector<std::pair<std::string, int64_t>>{{"sql", 0}}));
  tracker.ProcessOutputs(Msg(1.0, {Finished(Out("r1", {2}), FinishReason::kStop)}), 2.0);
  EXPECT_TRUE(tracker.RunningLoraAdapters().empty());
}

// Python's update_scheduler_stats assigns into the dicts the engine sent: a name already there
// keeps its place, a new one goes at the end, and names with no live request are not added.
TEST(RequestTracker, UpdateSchedulerStatsWritesEveryLiveAdapterIntoTheEnginesDicts) {
  RequestTracker tracker;
  RequestInfo a = Info("r1", 1.0, 1);
  a.lora_name = "sql";
  RequestInfo b = Info("r2", 1.0, 1);
  b.lora_name = "chat";
  RequestInfo base = Info("r3", 1.0, 1);
  tracker.AddRequest(a);
  tracker.AddRequest(b);
  tracker.AddRequest(base);
  tracker.ProcessOutputs(
      Msg(1.0,
          {WithEvents(Out("r2", {}), {{EventType::kQueued, 0.5}}),
           WithEvents(Out("r1", {1}), {{EventType::kQueued, 0.5}, {EventType::kScheduled, 0.6}}),
           WithEvents(Out("r3", {1}), {{EventType::kQueued, 0.5}})}),
      2.0);
  SchedulerStats stats;
  stats.waiting_lora_adapters = {{"engine-only", 5}, {"sql", 9}};
  tracker.UpdateSchedulerStats(&stats);
  using Adapters = std::vector<std::pair<std::string_view, int64_t>>;
  EXPECT_EQ(stats.waiting_lora_adapters, (Adapters{{"engine-only", 5}, {"sql", 0}, {"chat", 1}}));
  EXPECT_EQ(stats.running_lora_adapters, (Adapters{{"chat", 0}, {"sql", 1}}));
}

// ---- StatsRecorder::RecordIteration ---------------------------------------------------------

std::string Render(const Registry& reg) {
  std::string out;
  ExpositionOptions options;
  options.created_series = false;
  WriteText(reg, options, &out);
  return out;
}

bool HasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

#define EXPECT_LINE(text, line) \
  EXPECT_TRUE(HasLine(text, line)) << "missing: " << (line) << "\n" << (text)

TEST(RecordIteration, QuirkIterationTokensObservedOncePerMessageEvenIfZero) {
  FixedClock clock(123.456);
  Registry reg(&clock);
  StatsRecorder rec(&reg, RecorderOptions{});
  RequestTracker tracker;
  auto it = tracker.ProcessOutputs(Msg(2.0, {Out("unknown", {1, 2})}), 1.0);
  rec.RecordIteration(*it, 0);
  const std::string text = Render(reg);
  EXPECT_LINE(text, "vllm:iteration_tokens_total_count{engine=\"0\",model_name=\"model\"} 1.0");
  EXPECT_LINE(text, "vllm:iteration_tokens_total_sum{engine=\"0\",model_name=\"model\"} 0.0");
  EXPECT_LINE(text, "vllm:generation_tokens_total{engine=\"0\",model_name=\"model\"} 0.0");
}

// Python's histogram adds a NaN observation to _sum (and to no bucket), which makes the
// OpenMetrics exposition unparsable; vmetrics skips it and counts it (reporter.h,
// ObservationProblem).
TEST(RecordIteration, NanObservationsAreSkippedAndCounted) {
  Registry reg;
  StatsRecorder rec(&reg, RecorderOptions{});
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 5));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto it = tracker.ProcessOutputs(
      Msg(2.0, {WithEvents(Finished(Out("r1", {1}), FinishReason::kStop),
                           {{EventType::kQueued, nan}, {EventType::kScheduled, 1.0}})}),
      100.5);
  ASSERT_TRUE(std::isnan(it->finished_requests[0].queued_time));
  rec.RecordIteration(*it, 0);
  const std::string text = Render(reg);
  EXPECT_LINE(text, "vllm:request_queue_time_seconds_count{engine=\"0\",model_name=\"model\"} 0.0");
  EXPECT_LINE(text, "vllm:request_queue_time_seconds_sum{engine=\"0\",model_name=\"model\"} 0.0");
  EXPECT_LINE(text, "vmetrics_wire_values_skipped_total{reason=\"nan_observation\"} 1.0");
  EXPECT_LINE(text,
              "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"model\"} 1.0");
}

TEST(RecordIteration, InfiniteObservationsAreSkippedAndNegativeOnesObserved) {
  Registry reg;
  StatsRecorder rec(&reg, RecorderOptions{});
  IterationStats it;
  it.time_to_first_tokens_iter = {0.5, std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(), -0.25};
  rec.RecordIteration(it, 0);
  const std::string text = Render(reg);
  // A negative duration (timestamps that run backwards) is observed, as vLLM observes it.
  EXPECT_LINE(text,
              "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"model\"} 2.0");
  EXPECT_LINE(text, "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"model\"} 0.25");
  EXPECT_LINE(text, "vmetrics_wire_values_skipped_total{reason=\"infinite_observation\"} 2.0");
}

TEST(RecordIteration, QuirkMaxTokensParamObservedOnlyIfTruthy) {
  Registry reg;
  StatsRecorder rec(&reg, RecorderOptions{});
  RequestTracker tracker;
  tracker.AddRequest(Info("zero", 100.0, 5, 0));
  tracker.AddRequest(Info("none", 100.0, 5, std::nullopt));
  tracker.AddRequest(Info("ten", 100.0, 5, 10));
  auto it = tracker.ProcessOutputs(Msg(2.0, {Finished(Out("zero", {1}), FinishReason::kStop),
                                             Finished(Out("none", {1}), FinishReason::kStop),
                                             Finished(Out("ten", {1}), FinishReason::kLength)}),
                                   100.5);
  rec.RecordIteration(*it, 0);
  const std::string text = Render(reg);
  EXPECT_LINE(text, "vllm:request_params_max_tokens_count{engine=\"0\",model_name=\"model\"} 1.0");
  EXPECT_LINE(text, "vllm:request_params_max_tokens_sum{engine=\"0\",model_name=\"model\"} 10.0");
  EXPECT_LINE(text, "vllm:request_prompt_tokens_count{engine=\"0\",model_name=\"model\"} 3.0");
  EXPECT_LINE(
      text,
      "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"model\"} 2.0");
  EXPECT_LINE(text,
              "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name="
              "\"model\"} 1.0");
}

TEST(RecordIteration, FeedsEveryFamilyOfItsEngineAndSkipsUnknownEngines) {
  Registry reg;
  RecorderOptions options;
  options.engine_indexes = {0, 1};
  StatsRecorder rec(&reg, options);
  RequestTracker tracker;
  tracker.AddRequest(Info("r1", 100.0, 10));
  EngineCoreOutput o = WithEvents(
      Finished(Out("r1", {1, 2}), FinishReason::kRepetition),
      {{EventType::kQueued, 1.0}, {EventType::kScheduled, 1.5}, {EventType::kPreempted, 1.6}});
  o.prefill_stats = Prefill(10, 2, 3);
  auto it = tracker.ProcessOutputs(Msg(2.0, {o}, 1), 101.0);
  rec.RecordIteration(*it, 1);
  rec.RecordIteration(*it, 7);  // not configured: ignored
  const std::string text = Render(reg);
  const std::string e1 = "{engine=\"1\",model_name=\"model\"}";
  EXPECT_LINE(text, "vllm:num_preemptions_total" + e1 + " 1.0");
  EXPECT_LINE(text, "vllm:prompt_tokens_total" + e1 + " 10.0");
  EXPECT_LINE(text,
              "vllm:prompt_tokens_by_source_total{engine=\"1\",model_name=\"model\","
              "source=\"local_compute\"} 5.0");
  EXPECT_LINE(text,
              "vllm:prompt_tokens_by_source_total{engine=\"1\",model_name=\"model\","
              "source=\"local_cache_hit\"} 2.0");
  EXPECT_LINE(text,
              "vllm:prompt_tokens_by_source_total{engine=\"1\",model_name=\"model\","
              "source=\"external_kv_transfer\"} 3.0");
  EXPECT_LINE(text, "vllm:prompt_tokens_cached_total" + e1 + " 5.0");
  EXPECT_LINE(text, "vllm:generation_tokens_total" + e1 + " 2.0");
  EXPECT_LINE(text, "vllm:iteration_tokens_total_sum" + e1 + " 7.0");
  EXPECT_LINE(text, "vllm:request_prefill_kv_computed_tokens_sum" + e1 + " 5.0");
  EXPECT_LINE(text, "vllm:request_max_num_generation_tokens_sum" + e1 + " 2.0");
  EXPECT_LINE(text, "vllm:request_params_n_sum" + e1 + " 1.0");
  EXPECT_LINE(text, "vllm:time_to_first_token_seconds_sum" + e1 + " 1.0");
  EXPECT_LINE(text, "vllm:request_queue_time_seconds_sum" + e1 + " 0.5");
  EXPECT_LINE(text,
              "vllm:request_success_total{engine=\"1\",finished_reason=\"repetition\","
              "model_name=\"model\"} 1.0");
  EXPECT_LINE(text, "vllm:generation_tokens_total{engine=\"0\",model_name=\"model\"} 0.0");
}

// The tracker guesses each output's request from the engine's previous message (its batch
// order) before hashing the id. Whatever the order does — steady, shuffled, requests joining,
// finishing, aborted between messages and their slots reused by new requests, an id twice in
// one message, two engines interleaved, an output on the "wrong" engine — the results must be
// exactly those of a tracker that never guesses: one fed the same messages under engine indexes
// it does not keep an order for (at or above 1024, or negative).
TEST(RequestTracker, GuessingFromTheBatchOrderChangesNoResult) {
  std::mt19937_64 rng(11);
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  RequestTracker guessing;
  RequestTracker hashing;
  std::deque<std::string> ids;  // output ids are views: the strings stay put
  std::vector<std::vector<std::string_view>> batch(2);  // each engine's running requests
  int next_id = 0;
  double ts = 1.0;
  for (int step = 0; step < 3000; ++step) {
    const size_t e = step % 2;
    // New requests join the end of the batch; now and then an id that finished earlier comes
    // back (a slot and an id reused together).
    for (int j = 0; j < 3 && batch[e].size() < 40; ++j) {
      if (chance(0.5)) continue;
      const std::string& id = ids.emplace_back("cmpl-" + std::to_string(next_id++ % 500));
      const bool added = guessing.AddRequest(Info(id, ts, 10));
      ASSERT_EQ(hashing.AddRequest(Info(id, ts, 10)), added);
      if (added) batch[e].push_back(id);
    }
    // Aborts between messages: the request leaves the tracker but stays in the engine's batch
    // for a while (its later outputs are unknown ids).
    if (!batch[e].empty() && chance(0.1)) {
      const std::string_view id = batch[e][rng() % batch[e].size()];
      ASSERT_EQ(guessing.AbortRequest(id), hashing.AbortRequest(id));
    }
    std::vector<std::string_view> order = batch[e];
    if (order.size() > 2 && chance(0.1)) std::swap(order[0], order[order.size() / 2]);
    if (order.size() > 2 && chance(0.05)) std::shuffle(order.begin(), order.end(), rng);
    if (!order.empty() && chance(0.05)) order.push_back(order[rng() % order.size()]);  // twice
    if (!batch[1 - e].empty() && chance(0.05))
      order.push_back(batch[1 - e].front());  // other engine's
    std::vector<EngineCoreOutput> outs;
    for (std::string_view id : order) {
      EngineCoreOutput o = Out(id, {1});
      if (chance(0.03)) o.finish_reason = FinishReason::kLength;
      outs.push_back(std::move(o));
    }
    for (const EngineCoreOutput& o : outs) {
      if (!o.finish_reason) continue;
      for (auto& b : batch) std::erase(b, o.request_id);
    }
    ts += 0.01;
    const int64_t unguessed = chance(0.5) ? 5000 + static_cast<int64_t>(e) : -1;
    const auto a = guessing.ProcessOutputs(Msg(ts, outs, static_cast<int64_t>(e)), ts);
    const auto b = hashing.ProcessOutputs(Msg(ts, outs, unguessed), ts);
    ASSERT_EQ(a.has_value(), b.has_value()) << step;
    if (!a) continue;
    ASSERT_EQ(a->num_generation_tokens, b->num_generation_tokens) << step;
    ASSERT_EQ(a->time_to_first_tokens_iter, b->time_to_first_tokens_iter) << step;
    ASSERT_EQ(a->inter_token_latencies_iter, b->inter_token_latencies_iter) << step;
    ASSERT_EQ(a->max_num_generation_tokens_iter, b->max_num_generation_tokens_iter) << step;
    ASSERT_EQ(a->finished_requests.size(), b->finished_requests.size()) << step;
    for (size_t i = 0; i < a->finished_requests.size(); ++i) {
      EXPECT_EQ(a->finished_requests[i].request_id, b->finished_requests[i].request_id);
      EXPECT_EQ(a->finished_requests[i].num_generation_tokens,
                b->finished_requests[i].num_generation_tokens);
      EXPECT_EQ(a->finished_requests[i].e2e_latency, b->finished_requests[i].e2e_latency);
    }
    ASSERT_EQ(guessing.num_live_requests(), hashing.num_live_requests()) << step;
  }
  // The ids left are live in both, with the same counts.
  for (const std::string& id : ids) {
    const RequestState* a = guessing.Find(id);
    const RequestState* b = hashing.Find(id);
    ASSERT_EQ(a == nullptr, b == nullptr) << id;
    if (a != nullptr) {
      EXPECT_EQ(a->num_generation_tokens, b->num_generation_tokens) << id;
    }
  }
}

}  // namespace
}  // namespace vmetrics
